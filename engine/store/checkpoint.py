"""WAL checkpoints off the event loop: a thread with a connection of its own copies the WAL into the database.

The writer (engine/store/writer.py) runs its transactions on the event loop with SQLite's automatic checkpoint
turned off on its connection: in WAL mode with synchronous=NORMAL a commit appends to the WAL and does not sync,
but a checkpoint syncs the WAL and the database file, a disk wait of unbounded length. The writer pokes this
thread after commits (at most once per `INTERVAL_S`); the thread runs a PASSIVE checkpoint, which never blocks the
writer nor waits for readers, so the WAL is reset once it has been copied and no reader still needs it. A
checkpoint that fails (SQLITE_BUSY when another process checkpoints the same file) only leaves the WAL longer until
the next poke; closing the last connection checkpoints what is left.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

INTERVAL_S = 1.0  # at most one checkpoint per second: a busy job appends a few MB of WAL in that time


class Checkpointer:
    def __init__(self, path: Path, name: str):
        self._path, self._name = path, name
        self._wanted = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._due = 0.0
        self.checkpoints = 0  # checkpoints run (whether or not they copied everything)
        self.last: tuple[int, int, int] | None = None  # the last one's (busy, WAL frames, frames copied)

    def start(self) -> None:
        self._due = time.monotonic() + INTERVAL_S
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """Ask for a checkpoint if the last one was asked for at least `INTERVAL_S` ago (cheap: called per commit)."""
        now = time.monotonic()
        if now >= self._due:
            self._due = now + INTERVAL_S
            self._wanted.set()

    def stop(self) -> None:
        """End the thread (blocking: run it on a worker thread from async code)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping = True
        self._wanted.set()
        thread.join()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(str(self._path), check_same_thread=False)
        except sqlite3.Error:
            return  # no checkpoints: the WAL grows until the last connection's close checkpoints it
        try:
            while True:
                self._wanted.wait()
                self._wanted.clear()
                if self._stopping:
                    return
                try:
                    self.last = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error:
                    pass  # the WAL stays longer until the next poke (or the last connection's close)
                self.checkpoints += 1
        finally:
            conn.close()
