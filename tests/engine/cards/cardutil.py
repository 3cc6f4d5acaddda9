"""Helpers for card tests: real jobs, synthetic stores written through engine.store.Store, and re-sealing a
tampered bundle so that a test hits exactly the check it targets rather than only the hash check."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from core.blobs import resolve
from core.canonical import content_hash, sha256_hex
from engine.cards.format.lines import encode_lines
from engine.cards.format.model import COLUMNS, JSON_COLUMNS, STREAMS
from engine.cards.bundle import Bundle, stream_path
from engine.cards.manifest import set_manifest
from engine.sim.faults import FaultPlan
from engine.store import Store
from tests.conftest import start_sim
from tests.engine.jobutil import run
from tests.fakebench import FakeBench


def job(out: Path, faults: FaultPlan | None = None) -> dict[str, Any]:
    bench = FakeBench(n_train=12, n_validation=20, n_test=30)
    server = start_sim(bench, faults=faults)
    try:
        return run(out, server.base_url, bench)
    finally:
        server.stop()


# ------------------------------------------------------------------------------------------------ synthetic stores
@dataclass
class StoreSpec:
    """A run tree plus rows, written only through Store's methods."""

    run_id: str = "run-x"
    parents: list[int | None] = field(default_factory=lambda: [None])  # parent index per node (node 0 = root)
    edges: list[tuple[int, int]] = field(default_factory=list)  # (i, j) with i < j: acyclic
    statuses: list[tuple[int, str]] = field(default_factory=list)
    events: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)  # (execution, node, payload)
    annotations: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)  # (node, namespace, payload)
    run_status: str | None = "completed"
    finish_nodes: bool = True  # a well-behaved engine ends every running node before the run ends


def node_id(i: int) -> str:
    return f"n{i}"


def expand(payload: dict[str, Any]) -> dict[str, Any]:
    """`{"big": k}` (k an int) stands for a 66,000-character string: past the 64 KB inline cap."""
    if isinstance(payload.get("big"), int) and not isinstance(payload["big"], bool):
        return {**payload, "big": "xyz"[payload["big"] % 3] * 66_000}
    return payload


def build_store(path: Path, spec: StoreSpec) -> None:
    async def go() -> None:
        async with Store(path, run_id=spec.run_id) as store:
            levels: list[int] = []
            for i, parent in enumerate(spec.parents):
                level = 0 if parent is None else levels[parent] + 1
                levels.append(level)
                await store.add_node(node_id=node_id(i), parent_id=None if parent is None else node_id(parent),
                                     instance_key=f"row{i}", task_key="test" if level else "job", status="running",
                                     worker_key=f"w{i}" if level > 1 else None, level=level, actor="test")
            for i, j in spec.edges:
                await store.add_edge(node_id(i), node_id(j), actor="test")
            for i, status in spec.statuses:
                await store.set_node_status(node_id(i), status, actor="test", reason=f"moved to {status}",
                                            extra={"failure": {"kind": "unknown"}} if status == "failed" else None)
            sequences: dict[int, int] = {}
            for execution, node, payload in spec.events:
                seq = sequences.get(execution, 0)
                sequences[execution] = seq + 1
                await store.record_event(execution_id=f"x{execution}", node_id=node_id(node), worker_key="w",
                                         sequence=seq, event_type="model_call", turn_id=None, payload=expand(payload),
                                         started_at="2026-01-01T00:00:00.000Z", completed_at=None)
            for node, namespace, payload in spec.annotations:
                await store.annotate("node", node_id(node), namespace, expand(payload), actor="test")
            if spec.run_status is not None:
                if spec.finish_nodes:
                    for i, _ in enumerate(spec.parents[1:], start=1):
                        if store.rows("SELECT status FROM nodes WHERE node_id=?", (node_id(i),))[0][0] == "running":
                            await store.set_node_status(node_id(i), "cancelled", actor="test", reason="run ended")
                await store.set_node_status(node_id(0), spec.run_status, actor="test", reason="run finished")
                await store.mutate("run.status_changed", "run", spec.run_id, actor="test",
                                   new={"status": spec.run_status}, reason="run finished")

    anyio.run(go)


def rich_spec() -> StoreSpec:
    """A tree with edges, several events per execution, a failed node, and values past the 64 KB inline cap."""
    big = {"text": "A" * 70_000, "small": 1}
    return StoreSpec(
        parents=[None, 0, 0, 1, 1, 2], edges=[(3, 4), (4, 5), (3, 5)],
        statuses=[(3, "completed"), (4, "failed"), (5, "completed")],
        events=[(0, 3, {"n": 0}), (0, 3, {"n": 1, "big": big}), (0, 4, {"n": 2}), (1, 5, {"n": 0})],
        annotations=[(1, "demo.outcome", {"value": 1.0}), (1, "demo.outcome", {"value": 0.0}),
                     (2, "demo.big", {"blob": "B" * 80_000})],
    )


def store_rows(db: Path) -> dict[str, list[dict[str, Any]]]:
    """The store's five streams read straight from SQLite (blob references resolved), for comparisons."""
    conn = sqlite3.connect(str(db))
    blobs = {d: bytes(c) for d, c in conn.execute("SELECT sha256, content FROM blobs")}
    order = {"mutations": "sequence"}
    out: dict[str, list[dict[str, Any]]] = {}
    for stream in STREAMS:
        cols = COLUMNS[stream]
        rows = []
        for values in conn.execute(f"SELECT {', '.join(cols)} FROM {stream} ORDER BY {order.get(stream, 'rowid')}"):
            row = dict(zip(cols, values))
            for c in JSON_COLUMNS[stream]:
                if row[c] is not None:
                    row[c] = resolve(json.loads(row[c]), blobs.__getitem__)
            rows.append(row)
        out[stream] = rows
    conn.close()
    return out


def card_form(rows: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The store's rows as a card holds them: annotation.set mutations reference their annotation's payload by its
    content hash (the value is stored once)."""
    out = {s: list(r) for s, r in rows.items()}
    out["mutations"] = [
        {**m, "new_value": {**{k: v for k, v in m["new_value"].items() if k != "payload"},
                            "payload_sha256": content_hash(m["new_value"]["payload"])}}
        if m["mutation_type"] == "annotation.set" else m for m in rows["mutations"]]
    return out


def bundle_rows(bundle: Bundle) -> dict[str, list[dict[str, Any]]]:
    """Re-import: the bundle's streams as rows with blob references resolved."""
    return {s: [resolve(loc.row, bundle.blob) for loc in bundle.rows(s)[0]] for s in STREAMS}


# ------------------------------------------------------------------------------------------------ tampering
def lines(bundle: Bundle, stream: str) -> list[dict[str, Any]]:
    return [loc.row for loc in bundle.rows(stream)[0]]


def put_lines(bundle: Bundle, stream: str, rows: list[dict[str, Any]]) -> None:
    bundle.files[stream_path(stream)] = encode_lines(rows)


def manifest(bundle: Bundle) -> dict[str, Any]:
    return json.loads(bundle.files["manifest.json"])


def reseal(bundle: Bundle, man: dict[str, Any] | None = None) -> None:
    """Recompute stream hashes/counts, card_id, blob summary and listed files after a deliberate edit."""
    man = man or manifest(bundle)
    for stream in STREAMS:
        data = bundle.files.get(stream_path(stream), b"")
        man["streams"][stream].update(sha256=sha256_hex(data), rows=data.count(b"\n"), bytes=len(data))
    man["card_id"] = "sha256:" + content_hash({s: e["sha256"] for s, e in man["streams"].items()})
    blobs = [d for n, d in bundle.files.items() if n.startswith("blobs/")]
    man["blobs"].update(count=len(blobs), total_bytes=sum(map(len, blobs)))
    set_manifest(bundle, man)
