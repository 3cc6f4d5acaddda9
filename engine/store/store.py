"""The job's store: one SQLite file in WAL mode, written by exactly one writer (engine/store/writer.py), which runs
its batched transactions on the event loop and leaves the checkpoints (the disk syncs) to a thread of their own.

Producers hand the writer small operations and await their commit, so a model call is durable before its result
is used. The writer drains everything queued, runs it in one transaction, commits, then wakes the producers:
batching keeps per-call CPU low under high concurrency. A producer may also queue an operation and await its
commit later (`submit`): the writer is FIFO, so a later operation's commit implies this one's.

Lifecycle: `async with Store(...)` owns the writer. It cannot be cancelled and stops only when the block ends and
the queue is drained, so a job cancelled from outside still commits what it queued, including its final "failed"
status, and the file is consistent afterwards.

Reads on the per-call path never block the event loop: the replay keys (successful request keys, rollout keys)
are held in memory, so a live call costs a set lookup; only a hit reads its payload, on a worker thread.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from core.blobs import INLINE_CAP_BYTES, externalize
from core.canonical import canonical_json
from core.vocabulary import MutationType, NodeStatus
from engine.store.clock import utc_now
from engine.store.reads import StoreReads
from engine.store.schema import create_schema
from engine.store.units import StoreUnits
from engine.store.writer import Committed, Op, Writer


_MUTATIONS = ("INSERT INTO mutations(sequence, run_id, mutation_type, target_type, target_id, actor, old_value,"
              " new_value, reason, created_at) VALUES ")
_EDGES = "INSERT INTO edges(source_node_id, target_node_id, run_id, status, created_at, updated_at) VALUES "


def _node_added(parent_id: str | None, instance_key: str, task_key: str, status: str, worker_key: str | None,
                level: int) -> dict[str, Any]:
    """The new value of a node_added mutation."""
    return {"parent_id": parent_id, "instance_key": instance_key, "task_key": task_key, "status": status,
            "assigned_worker_key": worker_key, "level": level}


class Store(StoreReads, StoreUnits):
    def __init__(self, path: str | Path, run_id: str):
        self.path = Path(path)
        self.run_id = run_id
        self.path.parent.mkdir(parents=True, exist_ok=True)
        setup = sqlite3.connect(str(self.path))
        try:
            create_schema(setup)
        finally:
            setup.close()
        self._wconn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self._wconn.execute("PRAGMA synchronous=NORMAL")
        self._rconn = sqlite3.connect(str(self.path), check_same_thread=False)
        self._read_lock = threading.Lock()
        self._call_keys = {r[0] for r in self._wconn.execute(
            "SELECT DISTINCT request_key FROM events WHERE ok=1 AND request_key IS NOT NULL")}
        self._rollout_keys = {r[0] for r in self._wconn.execute("SELECT rollout_key FROM rollouts")}
        # request key -> the waiters of the one call sending it now, across all of the job's recorders
        # (engine/recorder.py): an identical request waits for that call and is answered from the store
        self.in_flight: dict[str, list[Any]] = {}
        self.generation = self._bump_generation()
        self._mutation_seq = self._next_mutation_seq()
        self._writer = Writer(self._wconn, self.path, on_rollback=self._rolled_back)

    # ----------------------------------------------------------------- lifecycle
    def _bump_generation(self) -> int:
        row = self._wconn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        gen = int(row[0]) + 1 if row else 0
        self._wconn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('generation', ?)", (str(gen),))
        return gen

    def _next_mutation_seq(self) -> int:
        return self._wconn.execute("SELECT COALESCE(MAX(sequence), -1) + 1 FROM mutations").fetchone()[0]

    async def __aenter__(self) -> Store:
        self._writer.start()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        # the writer drains what is queued and stops; the body's own exception propagates unchanged
        try:
            await self._writer.stop()
        finally:
            self.close()
        return None

    @property
    def writes(self) -> int:
        return self._writer.writes

    def _rolled_back(self) -> None:
        self._mutation_seq = self._next_mutation_seq()  # the one writer keeps the next sequence in memory

    def close(self) -> None:
        self._rconn.close()
        self._wconn.close()

    async def write(self, op: Op) -> Any:
        """Run `op(conn)` in the writer and return its result once committed."""
        return await self.submit(op)

    def submit(self, op: Op) -> Committed:
        """Queue `op(conn)` for the writer now and return its commit, to await later (`write` awaits it at once).
        The writer is FIFO: an op queued after this one is committed in the same transaction or a later one, so a
        producer that awaits a later op's commit knows this one is durable too; awaiting this commit still surfaces
        its own error."""
        return self._writer.submit(op)

    # ----------------------------------------------------------------- helpers used inside ops
    def _json(self, conn: sqlite3.Connection, value: Any) -> str | None:
        """`value` as stored: its canonical JSON, with parts over the inline cap replaced by blob references."""
        if value is None:
            return None
        text = canonical_json(value)
        if len(text) * 4 <= INLINE_CAP_BYTES or len(text.encode("utf-8")) <= INLINE_CAP_BYTES:
            return text  # the common case: one serialization, nothing to externalize

        def put(digest: str, data: bytes) -> None:
            conn.execute("INSERT OR IGNORE INTO blobs(sha256, bytes, media_type, encoding, content) "
                         "VALUES (?, ?, 'application/json', 'json', ?)", (digest, len(data), data))

        return canonical_json(externalize(value, put))

    def _mutation_row(self, conn: sqlite3.Connection, mutation_type: str, target_type: str, target_id: str, *,
                      actor: str, new: dict[str, Any] | None, old: dict[str, Any] | None = None,
                      reason: str | None = None, at: str | None = None) -> tuple[Any, ...]:
        # `at`: the timestamp of the row change this mutation records, so a replay reproduces created_at/updated_at
        seq = self._mutation_seq  # one writer: the next sequence lives in memory (reloaded after a rollback)
        self._mutation_seq += 1
        old_v = None if old is None else {"mutation_type": mutation_type, **old}
        new_v = None if new is None else {"mutation_type": mutation_type, **new}
        return (seq, self.run_id, mutation_type, target_type, target_id, actor, self._json(conn, old_v),
                self._json(conn, new_v), reason, at or utc_now())

    @staticmethod
    def _insert(conn: sqlite3.Connection, head: str, width: int, rows: list[tuple[Any, ...]]) -> None:
        """Rows in one multi-row INSERT: one statement (and one trip into SQLite) for all of them."""
        marks = "(" + ",".join("?" * width) + ")"
        conn.execute(head + ",".join([marks] * len(rows)), [v for row in rows for v in row])

    def op_mutation(self, conn: sqlite3.Connection, mutation_type: str, target_type: str, target_id: str, *,
                    actor: str, new: dict[str, Any] | None, old: dict[str, Any] | None = None,
                    reason: str | None = None, at: str | None = None) -> int:
        row = self._mutation_row(conn, mutation_type, target_type, target_id, actor=actor, new=new, old=old,
                                 reason=reason, at=at)
        self._insert(conn, _MUTATIONS, 10, [row])
        return int(row[0])

    # ----------------------------------------------------------------- stream writers (sync, inside one op)
    def op_event(self, conn: sqlite3.Connection, *, execution_id: str, node_id: str, worker_key: str,
                 sequence: int, event_type: str, turn_id: str | None, payload: dict[str, Any], started_at: str,
                 completed_at: str | None, request_key: str | None = None, ok: bool | None = None) -> str:
        event_id = f"{execution_id}:{sequence}"
        conn.execute(
            "INSERT INTO events(event_id, run_id, task_execution_id, node_id, worker_binding_key, sequence,"
            " event_type, turn_id, payload, started_at, completed_at, policy_version, request_key, ok)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,NULL,?,?)",
            (event_id, self.run_id, execution_id, node_id, worker_key, sequence, event_type, turn_id,
             self._json(conn, {"part_kind": event_type, **payload}), started_at, completed_at, request_key,
             None if ok is None else int(ok)),
        )
        if ok and request_key is not None:
            self._call_keys.add(request_key)
        return event_id

    def _insert_node(self, conn: sqlite3.Connection, now: str, node_id: str, parent_id: str | None,
                     instance_key: str, task_key: str, status: str, worker_key: str | None, level: int) -> bool:
        """The node's row, unless a node with that id exists (False)."""
        return bool(conn.execute(
            "INSERT OR IGNORE INTO nodes(node_id, run_id, parent_id, instance_key, task_key, status,"
            " assigned_worker_key, level, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (node_id, self.run_id, parent_id, instance_key, task_key, status, worker_key, level, now, now),
        ).rowcount)

    def op_node(self, conn: sqlite3.Connection, *, node_id: str, parent_id: str | None, instance_key: str,
                task_key: str, status: str, worker_key: str | None, level: int, actor: str,
                reason: str | None = None) -> bool:
        now = utc_now()
        if not self._insert_node(conn, now, node_id, parent_id, instance_key, task_key, status, worker_key, level):
            return False  # already there
        self.op_mutation(conn, MutationType.NODE_ADDED, "node", node_id, actor=actor, reason=reason, at=now,
                         new=_node_added(parent_id, instance_key, task_key, status, worker_key, level))
        return True

    def op_status(self, conn: sqlite3.Connection, node_id: str, status: str, *, actor: str,
                  reason: str | None = None, extra: dict[str, Any] | None = None, old: str | None = None) -> None:
        """Set a node's status; `old` is its current status when the caller knows it (it created the node in
        this op), which saves reading it."""
        if old is None:
            row = conn.execute("SELECT status FROM nodes WHERE node_id=?", (node_id,)).fetchone()
            if row is None:
                raise KeyError(f"unknown node {node_id}")
            old = str(row[0])
        now = utc_now()
        if not conn.execute("UPDATE nodes SET status=?, updated_at=? WHERE node_id=?", (status, now, node_id)).rowcount:
            raise KeyError(f"unknown node {node_id}")
        self.op_mutation(conn, MutationType.NODE_STATUS_CHANGED, "node", node_id, actor=actor,
                         old={"status": old}, new={"status": status, **(extra or {})}, reason=reason, at=now)

    def op_edge(self, conn: sqlite3.Connection, source: str, target: str, *, actor: str,
                status: str = "satisfied") -> bool:
        now = utc_now()
        if not conn.execute("INSERT OR IGNORE INTO edges(source_node_id, target_node_id, run_id, status, created_at,"
                            " updated_at) VALUES (?,?,?,?,?,?)", (source, target, self.run_id, status, now, now)
                            ).rowcount:
            return False  # already there
        self.op_mutation(conn, MutationType.EDGE_ADDED, "edge", f"{source}->{target}", actor=actor,
                         new={"source_node_id": source, "target_node_id": target, "status": status}, at=now)
        return True

    def op_call_node(self, conn: sqlite3.Connection, *, node_id: str, parent_id: str | None, instance_key: str,
                     task_key: str, worker_key: str | None, level: int, actor: str, reads: tuple[str, ...],
                     status: str, reason: str | None = None, extra: dict[str, Any] | None = None) -> bool:
        """A recorded call's node in its final status, with an edge from each node it read: the rows and mutations
        of op_node (as running), op_edge per read and op_status, in three statements for a new node (the usual
        case: the edges of a node created here are new too); an existing node (a retried call) takes that path."""
        now = utc_now()
        if not self._insert_node(conn, now, node_id, parent_id, instance_key, task_key, status, worker_key, level):
            for source in reads:
                self.op_edge(conn, source, node_id, actor=actor)
            self.op_status(conn, node_id, status, actor=actor, reason=reason, extra=extra)
            return False
        rows = [self._mutation_row(conn, MutationType.NODE_ADDED, "node", node_id, actor=actor, at=now,
                                   new=_node_added(parent_id, instance_key, task_key, NodeStatus.RUNNING, worker_key,
                                                   level))]
        if sources := list(dict.fromkeys(reads)):
            self._insert(conn, _EDGES, 6, [(source, node_id, self.run_id, "satisfied", now, now) for source in sources])
            rows += [self._mutation_row(conn, MutationType.EDGE_ADDED, "edge", f"{source}->{node_id}", actor=actor,
                                        new={"source_node_id": source, "target_node_id": node_id,
                                             "status": "satisfied"}, at=now) for source in sources]
        rows.append(self._mutation_row(conn, MutationType.NODE_STATUS_CHANGED, "node", node_id, actor=actor,
                                       old={"status": NodeStatus.RUNNING}, new={"status": status, **(extra or {})},
                                       reason=reason, at=now))
        self._insert(conn, _MUTATIONS, 10, rows)
        return True

    def op_annotation(self, conn: sqlite3.Connection, target_type: str, target_id: str, namespace: str,
                      payload: dict[str, Any], *, actor: str) -> int:
        seq = conn.execute(
            "SELECT COALESCE(MAX(sequence), -1) + 1 FROM annotations WHERE target_type=? AND target_id=?"
            " AND namespace=?", (target_type, target_id, namespace)).fetchone()[0]
        now = utc_now()
        conn.execute("INSERT INTO annotations(target_type, target_id, namespace, sequence, payload, created_at,"
                     " run_id) VALUES (?,?,?,?,?,?,?)",
                     (target_type, target_id, namespace, seq, self._json(conn, payload), now, self.run_id))
        self.op_mutation(conn, MutationType.ANNOTATION_SET, target_type, target_id, actor=actor,
                         new={"namespace": namespace, "sequence": seq, "payload": payload}, at=now)
        return seq

    def op_rollout(self, conn: sqlite3.Connection, *, rollout_key: str, node_id: str, evaluation_id: str | None,
                   phase: str, position: int, record: dict[str, Any]) -> None:
        conn.execute("INSERT OR REPLACE INTO rollouts(rollout_key, node_id, evaluation_id, phase, position,"
                     " record, created_at) VALUES (?,?,?,?,?,?,?)",
                     (rollout_key, node_id, evaluation_id, phase, position, self._json(conn, record), utc_now()))
        self._rollout_keys.add(rollout_key)

    # ----------------------------------------------------------------- async conveniences (one op each)
    async def record_event(self, **kw: Any) -> str:
        """Test and tooling convenience; the engine writes events only through engine.recorder."""
        return await self.write(lambda conn: self.op_event(conn, **kw))

    async def add_node(self, **kw: Any) -> bool:
        return await self.write(lambda conn: self.op_node(conn, **kw))

    async def set_node_status(self, node_id: str, status: str, **kw: Any) -> None:
        await self.write(lambda conn: self.op_status(conn, node_id, status, **kw))

    async def add_edge(self, source: str, target: str, **kw: Any) -> bool:
        return await self.write(lambda conn: self.op_edge(conn, source, target, **kw))

    async def annotate(self, target_type: str, target_id: str, namespace: str, payload: dict[str, Any], *,
                       actor: str) -> int:
        return await self.write(lambda conn: self.op_annotation(conn, target_type, target_id, namespace, payload,
                                                                actor=actor))

    async def mutate(self, mutation_type: str, target_type: str, target_id: str, *, actor: str,
                     new: dict[str, Any], old: dict[str, Any] | None = None, reason: str | None = None) -> int:
        return await self.write(lambda conn: self.op_mutation(conn, mutation_type, target_type, target_id,
                                                              actor=actor, old=old, new=new, reason=reason))

    async def externalize(self, values: list[Any]) -> list[Any]:
        """`values` with every part over the inline cap replaced by a `$blob` reference into this store (content
        addressed: a body already stored, e.g. a model response, is referenced, not stored again). Artifacts beside
        the store (records.jsonl, evaluations) are written from these, so a response is on disk once."""
        return list(await self.write(lambda conn: [json.loads(self._json(conn, v) or "null") for v in values]))
