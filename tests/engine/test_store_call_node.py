"""`Store.op_call_node` (a recorded call's node in three statements) writes exactly the rows and mutations of the
general path it replaces: op_node as running, op_edge per read, op_status to the final status."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core.vocabulary import MutationType, NodeStatus
from engine.store import Store

pytestmark = pytest.mark.anyio

NODE = {"parent_id": "rollout/r1", "instance_key": "r1", "task_key": "call", "worker_key": "agent:0", "level": 2,
        "actor": "runner"}
FAILURE = {"failure": {"kind": "infra_error", "message": "HTTP 503", "exception_type": "ServerError"}}


def _general(store: Store, conn: sqlite3.Connection, node_id: str, reads: tuple[str, ...], status: str,
             reason: str | None, extra: dict[str, Any] | None) -> None:
    created = store.op_node(conn, node_id=node_id, status=NodeStatus.RUNNING, **NODE)
    for source in reads:
        store.op_edge(conn, source, node_id, actor=NODE["actor"])
    store.op_status(conn, node_id, status, actor=NODE["actor"], reason=reason, extra=extra,
                    old=NodeStatus.RUNNING if created else None)


def _fast(store: Store, conn: sqlite3.Connection, node_id: str, reads: tuple[str, ...], status: str,
          reason: str | None, extra: dict[str, Any] | None) -> None:
    store.op_call_node(conn, node_id=node_id, reads=reads, status=status, reason=reason, extra=extra, **NODE)


CALLS = [  # (node, reads, status, reason, extra): new nodes, duplicate reads, a failure retried on the same node
    ("n1", (), NodeStatus.COMPLETED, None, None),
    ("n2", ("n1",), NodeStatus.COMPLETED, None, None),
    ("n3", ("n1", "n2", "n1"), NodeStatus.FAILED, "HTTP 503", FAILURE),
    ("n3", ("n1", "n2", "n0"), NodeStatus.COMPLETED, None, None),
]


def _tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        out = {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in ("nodes", "edges")}
        out["mutations"] = [(seq, mtype, ttype, tid, actor, old, json.loads(new) if new else None, reason)
                            for seq, _, mtype, ttype, tid, actor, old, new, reason, _ in
                            conn.execute("SELECT * FROM mutations ORDER BY sequence")]
    finally:
        conn.close()
    out["nodes"] = [row[:8] for row in out["nodes"]]  # timestamps aside
    out["edges"] = [row[:4] for row in out["edges"]]
    return out


async def test_the_call_node_op_writes_what_the_general_path_writes(tmp_path: Path):
    for name, write in (("general", _general), ("fast", _fast)):
        async with Store(tmp_path / f"{name}.sqlite", "run") as store:
            for node_id, reads, status, reason, extra in CALLS:
                await store.write(lambda conn: write(store, conn, node_id, reads, status, reason, extra))
    general, fast = _tables(tmp_path / "general.sqlite"), _tables(tmp_path / "fast.sqlite")
    assert fast == general
    assert [m[1] for m in fast["mutations"]][:3] == [MutationType.NODE_ADDED, MutationType.NODE_STATUS_CHANGED,
                                                          MutationType.NODE_ADDED]
    assert len(fast["edges"]) == 4 and fast["nodes"][2][5] == NodeStatus.COMPLETED  # n3 retried: completed


async def test_a_new_nodes_timestamps_agree_with_its_mutations(tmp_path: Path):
    async with Store(tmp_path / "card.sqlite", "run") as store:
        await store.write(lambda conn: _fast(store, conn, "n1", ("n0",), NodeStatus.COMPLETED, None, None))
    conn = sqlite3.connect(tmp_path / "card.sqlite")
    try:
        created, updated = conn.execute("SELECT created_at, updated_at FROM nodes").fetchone()
        stamps = [r[0] for r in conn.execute("SELECT created_at FROM mutations ORDER BY sequence")]
        edge = conn.execute("SELECT created_at, updated_at FROM edges").fetchone()
    finally:
        conn.close()
    assert stamps == [created, created, updated] and edge == (created, created)
