"""Named units of work over the store, for callers outside it: the store is the only module that writes SQL
(tests/test_layering.py holds it), so a caller names what it wants done or read and the SQL lives here.

- `cancel_running` (the job: nodes a killed process or a failing job left running become cancelled) reads the
  running nodes inside the writer's transaction, after every write queued before it, so a cancelled task's
  queued status change still lands first.

The optimize phase's transcript read (`transcripts`) is a read: engine/store/reads.py.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import TYPE_CHECKING, Any


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
