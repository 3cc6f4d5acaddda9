"""`sweep.sqlite`: one row per job (status, attempts, directory, headline result, error).

Statuses: pending -> running -> finished | degraded | failed (after --job-retries) ; not_implemented (listed,
never run). `degraded`: the job returned, but infrastructure failures left it unfinished (optimization
`infrastructure_invalid`, or evaluations holding infrastructure failures; engine/job/recovery.py); its `error`
column says why, and heal rounds (engine/sweep/heal.py) re-run it until it is finished.
A row left `running` by a killed sweep is treated as interrupted: the next run resumes it from its job
directory (the job's own store replays what it recorded). Writes are tiny and happen at job boundaries; they run
in a worker thread so the event loop never blocks on SQLite.

Live progress (table `progress`, one row per job that ever started; added by CREATE IF NOT EXISTS, so an older
sweep.sqlite opens and resumes unchanged): the driver's pid and host, the start of the attempt, a heartbeat and the
job's last progress snapshot (engine/progress.py), written by engine/sweep/live.py at most once a second.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from functools import wraps
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import UsageError
from engine.sweep.plan import JobSpec

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
  key TEXT PRIMARY KEY, position INTEGER NOT NULL, method TEXT NOT NULL, cell TEXT NOT NULL,
  seed INTEGER NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, directory TEXT NOT NULL,
  result TEXT, error TEXT, reason TEXT, spec TEXT NOT NULL, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS progress (
  key TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL, started REAL NOT NULL, heartbeat REAL NOT NULL,
  snapshot TEXT);
"""
STATUSES = ("pending", "running", "finished", "degraded", "failed", "not_implemented")
TO_RUN = ("pending", "running", "degraded")  # what a `sweep run` (re)starts


@dataclass(frozen=True)
class ProgressRow:
    """A started job's live record: who drives it (pid, host), when its attempt started, its last heartbeat and
    progress snapshot (engine/progress.ProgressSnapshot as a dict; None before the first one)."""

    key: str
    pid: int
    host: str
    started: float
    heartbeat: float
    snapshot: dict[str, Any] | None


@dataclass(frozen=True)
class JobRow:
    key: str
    method: str
    cell: str
    seed: int
    status: str
    attempts: int
    directory: str
    result: dict[str, Any] | None
    error: str | None
    reason: str | None


def _serialized(method: Callable[..., Any]) -> Callable[..., Any]:
    """One statement sequence at a time on the shared connection (the executor writes from worker threads)."""
    @wraps(method)
    def locked(self: "SweepState", *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)
    return locked


class SweepState:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.executescript(SCHEMA)
        except sqlite3.Error as exc:
            raise UsageError(f"sweep state {path} is unusable: {exc}") from None

    def close(self) -> None:
        self._conn.close()

    @_serialized
    def check_settings(self, settings: dict[str, Any]) -> None:
        """A sweep directory belongs to one set of job settings (budget, model, ...): a different one is refused."""
        text = json.dumps(settings, sort_keys=True)
        row = self._conn.execute("SELECT value FROM meta WHERE name='settings'").fetchone()
        if row is None:
            self._conn.execute("INSERT INTO meta VALUES ('settings', ?)", (text,))
        elif row[0] != text:
            raise UsageError(f"{self.path.parent} holds a sweep with other job settings ({row[0]}); use another "
                             "--sweep-dir")

    @_serialized
    def meta(self, name: str) -> Any:
        row = self._conn.execute("SELECT value FROM meta WHERE name=?", (name,)).fetchone()
        return json.loads(row[0]) if row else None

    @_serialized
    def set_meta(self, name: str, value: Any) -> None:
        with self._conn:
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, json.dumps(value, sort_keys=True)))

    @_serialized
    def add(self, specs: list[JobSpec]) -> None:
        """Insert jobs not yet known (known ones keep their status, attempts and results)."""
        now = time.time()
        with self._conn:
            base = self._conn.execute("SELECT COALESCE(MAX(position), -1) + 1 FROM jobs").fetchone()[0]
            for i, s in enumerate(specs):
                self._conn.execute(
                    "INSERT OR IGNORE INTO jobs (key, position, method, cell, seed, status, directory, reason, spec,"
                    " updated) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (s.key, base + i, s.method, s.cell, s.seed, "pending" if s.runnable else "not_implemented",
                     f"runs/{s.key}", s.reason, json.dumps(_spec_json(s)), now))

    @_serialized
    def start(self, key: str) -> int:
        now = time.time()
        with self._conn:
            self._conn.execute("UPDATE jobs SET status='running', attempts=attempts+1, error=NULL, updated=? "
                               "WHERE key=?", (now, key))
            self._conn.execute("INSERT OR REPLACE INTO progress VALUES (?,?,?,?,?,NULL)",
                               (key, os.getpid(), socket.gethostname(), now, now))
        return int(self._conn.execute("SELECT attempts FROM jobs WHERE key=?", (key,)).fetchone()[0])

    @_serialized
    def finish(self, key: str, result: dict[str, Any], degraded: list[str] | None = None) -> None:
        """The job returned: `finished`, or `degraded` with the reasons when infrastructure failures left it
        unfinished."""
        status, error = ("degraded", "; ".join(degraded)[:2000]) if degraded else ("finished", None)
        with self._conn:
            self._conn.execute("UPDATE jobs SET status=?, result=?, error=?, updated=? WHERE key=?",
                               (status, json.dumps(result, sort_keys=True), error, time.time(), key))

    @_serialized
    def keys_with(self, statuses: tuple[str, ...]) -> set[str]:
        marks = ",".join("?" * len(statuses))
        return {r[0] for r in self._conn.execute(f"SELECT key FROM jobs WHERE status IN ({marks})", statuses)}

    @_serialized
    def fail(self, key: str, error: str, final: bool) -> None:
        with self._conn:
            self._conn.execute("UPDATE jobs SET status=?, error=?, updated=? WHERE key=?",
                               ("failed" if final else "pending", error[:2000], time.time(), key))

    @_serialized
    def retry_failed(self) -> None:
        """A new `sweep run` gives failed jobs a fresh set of attempts."""
        with self._conn:
            self._conn.execute("UPDATE jobs SET status='pending', attempts=0 WHERE status='failed'")

    @_serialized
    def rows(self, keys: list[str] | None = None) -> list[JobRow]:
        cur = self._conn.execute("SELECT key, method, cell, seed, status, attempts, directory, result, error, reason "
                                 "FROM jobs ORDER BY position")
        rows = [JobRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]) if r[7] else None, r[8], r[9])
                for r in cur.fetchall()]
        return rows if keys is None else [r for r in rows if r.key in set(keys)]

    @_serialized
    def record_progress(self, snapshots: dict[str, dict[str, Any]], beating: set[str]) -> None:
        """One transaction: the new snapshots, and a heartbeat for every job in `beating` (the running ones)."""
        now = time.time()
        with self._conn:
            for key in sorted(beating | set(snapshots)):
                if key in snapshots:
                    self._conn.execute("UPDATE progress SET heartbeat=?, snapshot=? WHERE key=?",
                                       (now, json.dumps(snapshots[key], sort_keys=True), key))
                else:
                    self._conn.execute("UPDATE progress SET heartbeat=? WHERE key=?", (now, key))

    @_serialized
    def progress(self) -> dict[str, ProgressRow]:
        cur = self._conn.execute("SELECT key, pid, host, started, heartbeat, snapshot FROM progress")
        return {r[0]: ProgressRow(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]) if r[5] else None)
                for r in cur.fetchall()}

    @_serialized
    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for status, n in self._conn.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status"):
            counts[status] = n
        return counts


def _spec_json(s: JobSpec) -> dict[str, Any]:
    return {"method": s.method, "cell": s.cell, "seed": s.seed, "tables": list(s.tables),
            "registry_key": s.registry_key, "allow_any_cell": s.allow_any_cell, "data_dir": s.data_dir}

