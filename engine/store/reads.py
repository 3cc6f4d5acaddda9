"""The store's read side: a separate SQLite connection, guarded by a lock; the per-call lookups check in-memory key
sets first and read on a worker thread only on a hit, so the event loop never blocks on SQLite."""

from __future__ import annotations

import json
import sqlite3
import threading
from functools import partial
from typing import Any

import anyio

from core.blobs import resolve


class StoreReads:
    _rconn: sqlite3.Connection
    _read_lock: threading.Lock
    _call_keys: set[str]
    _rollout_keys: set[str]

    def resolve(self, value: Any) -> Any:
        """The inverse of `externalize` (blob references read back). Blocking: phase boundaries only."""
        return resolve(value, self.blob)

    def _load(self, text: str | None) -> Any:
        if text is None:
            return None
        return resolve(json.loads(text), self.blob)

    def blob(self, digest: str) -> bytes:
        with self._read_lock:
            row = self._rconn.execute("SELECT content FROM blobs WHERE sha256=?", (digest,)).fetchone()
        if row is None:
            raise KeyError(f"missing blob {digest}")
        return bytes(row[0])

    async def find_call(self, request_key: str) -> tuple[str, dict[str, Any]] | None:
        """The first successful model-call event with this logical request key (for replay)."""
        if request_key not in self._call_keys:
            return None
        sql = "SELECT event_id, payload FROM events WHERE request_key=? AND ok=1 ORDER BY rowid LIMIT 1"
        row = await anyio.to_thread.run_sync(partial(self._read_loaded, sql, (request_key,)))
        return None if row is None else (row[0], row[1])

    async def find_rollout(self, rollout_key: str) -> dict[str, Any] | None:
        if rollout_key not in self._rollout_keys:
            return None
        row = await anyio.to_thread.run_sync(partial(
            self._read_loaded, "SELECT record FROM rollouts WHERE rollout_key=?", (rollout_key,)))
        return None if row is None else row[0]

    def _read_loaded(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The row with its last column decoded, or None: one worker-thread trip for the read and the decoding
        (each trip costs the loop a wake-up)."""
        row = self._read_one(sql, params)
        return None if row is None else (*row[:-1], self._load(row[-1]))

    def _read_one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._read_lock:
            row: tuple[Any, ...] | None = self._rconn.execute(sql, params).fetchone()
            return row

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """A blocking read for start-up and phase boundaries (never on the per-call path)."""
        with self._read_lock:
            return self._rconn.execute(sql, params).fetchall()
