"""The store's one writer: a thread of its own that batches queued operations into SQLite transactions.

Producers on the event loop `submit` an operation (a function of the write connection) and await its `Committed`.
The thread takes everything queued, runs it in one transaction, commits, and wakes the producers through the loop's
`call_soon_threadsafe`: a commit costs a producer one event-loop turn, where a writer task on the loop that hands
each batch to a worker thread (anyio.to_thread) costs several turns and a thread hand-off per batch.

A batch runs as one transaction. If an operation raises, or the transaction cannot commit (disk full, I/O error),
it is rolled back and the batch runs again with one transaction per operation, so only what fails is undone and
handed its error (SQLite rolls a whole transaction back by itself on some of these errors, which rules out
savepoints). If even that fails, every producer of the batch gets the error; the writer goes on either way.

The writer cannot be cancelled: `stop` drains the queue first, so a cancelled job still commits what it queued.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable, Generator
from typing import Any

import anyio

Op = Callable[[sqlite3.Connection], Any]


class _Pending:
    __slots__ = ("done", "error", "op", "result")

    def __init__(self, op: Op, done: asyncio.Future[None]):
        self.op = op
        self.done = done  # resolved on the producer's loop once the op's transaction committed (or failed)
        self.result: Any = None
        self.error: BaseException | None = None


class Committed:
    """The commit of one queued op, to be awaited once: it returns the op's result once its transaction committed,
    or raises the op's error. The op runs whatever happens to its waiter (a cancelled waiter only stops waiting)."""

    __slots__ = ("_pending",)

    def __init__(self, pending: _Pending):
        self._pending = pending

    def __await__(self) -> Generator[Any, None, Any]:
        pending = self._pending
        if not pending.done.done():
            yield from pending.done.__await__()
        if pending.error is not None:
            raise pending.error
        return pending.result


def _wake(batch: list[_Pending]) -> None:
    for item in batch:
        if not item.done.done():  # a cancelled waiter cancelled its future
            item.done.set_result(None)


class Writer:
    def __init__(self, conn: sqlite3.Connection, name: str, *, on_rollback: Callable[[], None]):
        self._conn, self._name, self._on_rollback = conn, name, on_rollback
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.writes = 0  # operations committed or handed their error

    def start(self) -> None:
        """Start the thread; producers then submit from the running loop."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """Drain what is queued, then end the thread (shielded: a cancelled job still commits what it queued)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._queue.put(None)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(thread.join)
        self._loop = None

    def submit(self, op: Op) -> Committed:
        if self._thread is None or self._loop is None:
            raise RuntimeError("store is not open for writing (use `async with store`)")
        pending = _Pending(op, self._loop.create_future())
        self._queue.put(pending)
        return Committed(pending)

    # ------------------------------------------------------------------ the thread
    def _run(self) -> None:
        assert self._loop is not None
        loop, get, get_nowait = self._loop, self._queue.get, self._queue.get_nowait
        stopping = False
        while not stopping:
            batch: list[_Pending] = []
            item = get()
            while True:
                if item is None:
                    stopping = True
                else:
                    batch.append(item)
                try:
                    item = get_nowait()
                except queue.Empty:
                    break
            if batch:
                try:
                    self._batch(batch)
                except BaseException as exc:  # BEGIN / COMMIT failed (disk full, I/O error): nothing committed
                    self._abandon(batch, exc)
                self.writes += len(batch)
                loop.call_soon_threadsafe(_wake, batch)

    def _batch(self, batch: list[_Pending]) -> None:
        conn = self._conn
        try:
            conn.execute("BEGIN")
            for item in batch:
                item.result = item.op(conn)
            conn.execute("COMMIT")
        except Exception:
            if conn.in_transaction:  # SQLite itself rolls back on some errors (SQLITE_FULL, I/O errors)
                conn.execute("ROLLBACK")
            self._on_rollback()
            self._isolated(batch)

    def _isolated(self, batch: list[_Pending]) -> None:
        """The batch again, one transaction per op: each op commits or is undone and handed its error alone."""
        conn = self._conn
        for item in batch:
            try:
                conn.execute("BEGIN")
                item.result, item.error = item.op(conn), None
                conn.execute("COMMIT")
            except Exception as exc:  # handed back to the producer, which re-raises it
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                self._on_rollback()
                item.result, item.error = None, exc

    def _abandon(self, batch: list[_Pending], exc: BaseException) -> None:
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            self._on_rollback()
        except sqlite3.Error:
            pass  # the connection is unusable; the next batch reports its own error
        for item in batch:
            item.result, item.error = None, exc
