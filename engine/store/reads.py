"""The store's read side: a separate SQLite connection, guarded by a lock; the per-call lookups check in-memory key
sets first and read on a worker thread only on a hit, so the event loop never blocks on SQLite.

`transcripts` is the optimize phase's named read of whole rollouts (core.optimizer.SessionRunner.transcripts:
MAPRO, MASPO and TAVO read every turn): the successful model calls and tool replies of many rollouts, in one
worker-thread trip."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import anyio

from core.blobs import resolve
from core.transcript import ToolReply, Transcript, Turn

# every successful model call and every tool reply of a rollout's attempts (executions `<rollout>#...`)
_TURN_EVENTS = ("SELECT task_execution_id, node_id, event_type, payload FROM events WHERE task_execution_id >= ? "
                "AND task_execution_id < ? AND ((event_type = 'model_call' AND ok = 1) OR event_type = 'tool_result') "
                "ORDER BY rowid")


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

    async def transcripts(self, rollout_ids: Sequence[str]) -> list[Transcript]:
        """Every recorded successful turn of each rollout (all its attempts, in recorded order) with the tool
        replies of its tool calls; one worker-thread trip for all of them, in input order."""
        return await anyio.to_thread.run_sync(partial(self._transcripts_of, list(rollout_ids)))

    def _transcripts_of(self, rollout_ids: list[str]) -> list[Transcript]:
        with self._read_lock:  # the rows first: resolving blobs takes the lock again
            found = [self._rconn.execute(_TURN_EVENTS, (f"{r}#", f"{r}$")).fetchall()  # '$' follows '#'
                     for r in rollout_ids]
        return [_transcript(r, rows, self._load) for r, rows in zip(rollout_ids, found)]


def _transcript(rollout_id: str, rows: list[tuple[Any, ...]], load: Callable[[str | None], Any]) -> Transcript:
    turns: list[dict[str, Any]] = []
    by_node: dict[str, dict[str, Any]] = {}
    for execution, node_id, kind, text in rows:
        payload = load(text) or {}
        if kind == "tool_result":
            if node_id in by_node:
                by_node[node_id]["tool_replies"].append(ToolReply(
                    str(payload.get("tool_name") or ""), str(payload.get("content") or ""),
                    bool(payload.get("is_error"))))
            continue
        if not isinstance(payload.get("role"), str):
            continue
        response = payload.get("response") or {}
        turn = {"role": payload["role"], "member": int(payload.get("member") or 0),
                "turn": int(payload.get("turn") or 0), "attempt": execution,
                "messages": tuple((payload.get("request") or {}).get("messages") or ()),
                "reply": str(response.get("content") or ""),
                "tool_calls": tuple(response.get("tool_calls") or ()), "tool_replies": []}
        by_node[node_id] = turn
        turns.append(turn)
    return Transcript(rollout_id, tuple(Turn(**{**t, "tool_replies": tuple(t["tool_replies"])}) for t in turns))
