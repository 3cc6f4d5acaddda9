"""Run a batch of centralized rollouts (native or AutoGen) through the real Runner, Store, endpoint pool and, for
AutoGen, the recording gateway; read back the card's agent-turn nodes, read edges and model_call events."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from core.benchmark import Benchmark
from core.cell import parse_cell
from core.models import RolloutRecord, Row
from core.protocol import OPTIMIZATION_DECODING
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts
from engine.gateway.server import Gateway
from engine.runner import RetryPolicy, RolloutSpec, Runner
from engine.runtimes import build_topology
from engine.store import Store
from topologies.prompts import seed_bundle

DECODING = OPTIMIZATION_DECODING


def specs(bench: Benchmark, rows: Sequence[Row], tag: str) -> list[RolloutSpec]:
    roles = build_topology(parse_cell(f"task={bench.name},topology=centralized"), 1).roles(bench.name, 4)
    bundle = seed_bundle("centralized", bench.name, roles)
    return [RolloutSpec(row=r, bundle=bundle, seed=700 + i, phase="optimize", rollout_key=f"{tag}:{i}", position=i)
            for i, r in enumerate(rows)]


def execute(url: str, db: Path, bench: Benchmark, framework: str, batch: list[RolloutSpec],
            concurrency: int = 4, model: str = "test-model") -> list[RolloutRecord]:
    records, _ = anyio.run(_execute, url, db, bench, framework, batch, concurrency, model, None)
    return records


def execute_with_deadline(url: str, db: Path, bench: Benchmark, batch: list[RolloutSpec],
                          attempt_timeout: float) -> tuple[list[RolloutRecord], list[str]]:
    """AutoGen rollouts under an attempt deadline; the records and the AutoGen tasks still alive after the batch
    (while the job's event loop and gateway still run)."""
    return anyio.run(_execute, url, db, bench, "autogen", batch, 4, "test-model", attempt_timeout)


async def _execute(url: str, db: Path, bench: Benchmark, framework: str, batch: list[RolloutSpec],
                   concurrency: int, model: str,
                   attempt_timeout: float | None) -> tuple[list[RolloutRecord], list[str]]:
    cell = parse_cell(f"task={bench.name},topology=centralized,framework={framework}")
    async with AsyncExitStack() as stack:
        pool = EndpointPool([Endpoint(url, model, capacity=concurrency, timeouts=Timeouts(read=30))])
        stack.push_async_callback(pool.aclose)
        store = await stack.enter_async_context(Store(db, run_id="r"))
        gateway = await stack.enter_async_context(Gateway()) if framework != "native" else None
        await store.add_node(node_id="run", parent_id=None, instance_key="r", task_key="job", status="running",
                             worker_key=None, level=0, actor="t")
        runner = Runner(store=store, pool=pool, bench=bench, topology=build_topology(cell, 1), run_node="run",
                        retry=RetryPolicy(base_delay=0.0), concurrency=concurrency, gateway=gateway,
                        attempt_timeout=attempt_timeout)
        records = await runner.run_batch(batch, DECODING)
        await anyio.sleep(0.2)  # a leaked handler would still be running (or sending) now
        alive = [t.get_name() for t in asyncio.all_tasks() if "autogen" in _source_of(t)]
        return records, alive


def _source_of(task: asyncio.Task[Any]) -> str:
    code = getattr(task.get_coro(), "cr_code", None)
    return code.co_filename if code is not None else ""


def turns(db: Path) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """Agent-turn nodes (node id -> 'role.member/tturn' under its rollout) and the read edges between them."""
    conn = sqlite3.connect(str(db))
    try:
        nodes = [n for (n,) in conn.execute("SELECT node_id FROM nodes WHERE level=2")]
        edges = conn.execute("SELECT source_node_id, target_node_id FROM edges").fetchall()
    finally:
        conn.close()
    short = {n: "/".join(n.split("/")[-2:]) for n in nodes}
    return short, {(s, t) for s, t in edges if s in short and t in short}


def role_edges(db: Path) -> set[tuple[str, str]]:
    """Who read whom, by role: (the role read, the reading role)."""
    short, edges = turns(db)
    return {(short[s].split(".")[0], short[t].split(".")[0]) for s, t in edges}


def model_calls(db: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT payload FROM events WHERE event_type='model_call' ORDER BY event_id").fetchall()
    finally:
        conn.close()
    return [json.loads(p) for (p,) in rows]


def tool_events(db: Path) -> list[tuple[str, str, str, str]]:
    """(rollout, 'role.member/tturn' of the model call, event type, tool name + args or result), sorted."""
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT node_id, event_type, payload FROM events "
                            "WHERE event_type IN ('tool_call', 'tool_result')").fetchall()
    finally:
        conn.close()
    found = []
    for node, kind, payload in rows:
        data = json.loads(payload)
        what = json.dumps(data.get("args") if kind == "tool_call" else data.get("content"), sort_keys=True)
        found.append((node.split("/")[1], "/".join(node.split("/")[-2:]), kind, f"{data['tool_name']} {what}"))
    return sorted(found)
