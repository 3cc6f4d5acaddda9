"""Named units of work over the store, for callers outside it: the store is the only module that writes SQL
(tests/test_layering.py holds it), so a caller names what it wants done or read and the SQL lives here.

- `cancel_running` (the job: nodes a killed process or a failing job left running become cancelled) reads the
  running nodes inside the writer's transaction, after every write queued before it, so a cancelled task's
  queued status change still lands first.
- `role_outputs` (the optimize phase: MAPRO's and MASPO's per-role transcripts) reads the last reply per role of
  many rollouts in one worker-thread trip, off the event loop like the store's other reads; `role_outputs_now`
  is the same read, blocking, for a rollout nobody asked for in advance.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from core.blobs import resolve

_ROLE_REPLIES = ("SELECT payload FROM events WHERE task_execution_id >= ? AND task_execution_id < ? AND "
                 "event_type = 'model_call' AND ok = 1 ORDER BY rowid")


class StoreUnits:
    _rconn: sqlite3.Connection
    _read_lock: threading.Lock
    generation: int

    if TYPE_CHECKING:
        async def write(self, op: Any) -> Any: ...

        def op_status(self, conn: sqlite3.Connection, node_id: str, status: str, *, actor: str,
                      reason: str | None = None, extra: dict[str, Any] | None = None,
                      old: str | None = None) -> None: ...

        def blob(self, digest: str) -> bytes: ...

    async def cancel_running(self, *, keep: str, actor: str, reason: str, failure: dict[str, Any]) -> list[str]:
        """Every node still `running` except `keep` becomes `cancelled` with `reason` and `failure`; returns them."""
        def op(conn: sqlite3.Connection) -> list[str]:
            stale = [r[0] for r in conn.execute("SELECT node_id FROM nodes WHERE status='running' AND node_id != ?",
                                                (keep,))]
            for node_id in stale:
                self.op_status(conn, node_id, "cancelled", actor=actor, reason=reason, extra={"failure": failure})
            return stale

        result: list[str] = await self.write(op)
        return result

    async def role_outputs(self, rollout_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """For each rollout, the last successful reply text per role (its last attempt wins), in the order the
        roles first spoke; one worker-thread trip for all of them."""
        return await anyio.to_thread.run_sync(partial(self._role_outputs_of, list(rollout_ids)))

    def role_outputs_now(self, rollout_id: str) -> dict[str, str]:
        """`role_outputs` of one rollout, blocking (a cold path: the prefetched ones are in memory)."""
        return self._role_outputs_of([rollout_id])[rollout_id]

    def _role_outputs_of(self, rollout_ids: list[str]) -> dict[str, dict[str, str]]:
        with self._read_lock:  # the rows first: resolving blobs takes the lock again
            texts = {r: self._rconn.execute(_ROLE_REPLIES, (f"{r}#", f"{r}$")).fetchall()  # '$' follows '#'
                     for r in rollout_ids}
        found: dict[str, dict[str, str]] = {}
        for rollout_id, rows in texts.items():
            out: dict[str, str] = {}
            for (text,) in rows:
                payload = resolve(json.loads(text), self.blob)
                response = payload.get("response") or {}
                if isinstance(payload.get("role"), str):
                    out[payload["role"]] = str(response.get("content") or "")
            found[rollout_id] = out
        return found
