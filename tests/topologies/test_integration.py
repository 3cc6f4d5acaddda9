"""Each multi-agent topology for real: Runner + Store + Endpoint against the labelled simulated endpoint.

Checks the recorded agent-turn nodes and read edges, the vote, request seeds (core.seeds.turn_seed under the
topology's member seed scheme: replica i of Independent sends rollout seed + i, section 2.2; the others
core.seeds.call_seed per role, member and turn), determinism across runs and independence of the concurrency limit.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.cell import TEAM_SIZES
from core.models import RolloutRecord
from core.protocol import OPTIMIZATION_DECODING
from core.seeds import call_seed, member_seed_scheme, turn_seed
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts
from engine.runner import RetryPolicy, RolloutSpec, Runner
from engine.sim.server import SimServer
from engine.store import Store
from tests.conftest import start_sim
from tests.fakebench import FakeBench
from topologies.prompts import seed_bundle
from topologies.registry import get_topology
from topologies.teams import team_spec

DECODING = OPTIMIZATION_DECODING
MULTI = ("independent", "sequential", "centralized", "decentralized")


def gpqa_like() -> FakeBench:
    bench = FakeBench(n_train=12)
    bench.name = "gpqa"  # type: ignore[misc]  # the gpqa team spec applies; the rows stay the fake sums
    return bench


@pytest.fixture(scope="module")
def server() -> Iterator[SimServer]:
    sim = start_sim(gpqa_like())
    try:
        yield sim
    finally:
        sim.stop()


def specs(topology: str, n: int, rows: int = 1, tag: str = "it") -> list[RolloutSpec]:
    bench = gpqa_like()
    top = get_topology(topology, n)
    bundle = seed_bundle(topology, "gpqa", top.roles("gpqa", n))
    loaded = bench.load_rows(list(bench.splits().train[:rows]))
    return [RolloutSpec(row=r, bundle=bundle, seed=500 + i, phase="optimize", rollout_key=f"{tag}:{topology}:{n}:{i}",
                        position=i) for i, r in enumerate(loaded)]


def execute(url: str, db: Path, topology: str, n: int, batch: list[RolloutSpec], concurrency: int = 8,
            communication: str = "freeform") -> list[RolloutRecord]:
    async def main() -> list[RolloutRecord]:
        async with AsyncExitStack() as stack:
            pool = EndpointPool([Endpoint(url, "test-model", capacity=concurrency, timeouts=Timeouts(read=10))])
            stack.push_async_callback(pool.aclose)
            store = await stack.enter_async_context(Store(db, run_id="r"))
            await store.add_node(node_id="run", parent_id=None, instance_key="r", task_key="job", status="running",
                                 worker_key=None, level=0, actor="t")
            top = get_topology(topology, n, communication)
            runner = Runner(store=store, pool=pool, bench=gpqa_like(), topology=top, run_node="run",
                            retry=RetryPolicy(base_delay=0.0), concurrency=concurrency)
            return await runner.run_batch(batch, DECODING)

    return anyio.run(main)


def graph(db: Path) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
    """Agent-turn nodes as (rollout node, 'role.member/tturn') and edges between them, by those short names."""
    conn = sqlite3.connect(str(db))
    try:
        nodes = conn.execute("SELECT node_id, parent_id FROM nodes WHERE level=2 ORDER BY node_id").fetchall()
        edges = conn.execute("SELECT source_node_id, target_node_id FROM edges").fetchall()
    finally:
        conn.close()
    short = {node: "/".join(node.split("/")[-2:]) for node, _ in nodes}
    return ([(parent, short[node]) for node, parent in nodes],
            {(short[s], short[t]) for s, t in edges if s in short and t in short})


def model_calls(db: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT payload FROM events WHERE event_type='model_call' ORDER BY event_id").fetchall()
    finally:
        conn.close()
    return [json.loads(p) for (p,) in rows]


def expected(topology: str, n: int) -> tuple[set[str], set[tuple[str, str]]]:
    if topology == "independent":
        return {f"solver.{i}/t0" for i in range(n)}, set()
    if topology == "sequential":
        roles = [s.role for s in team_spec("gpqa").stages(n)]
        return ({f"{r}.0/t0" for r in roles},
                {(f"{a}.0/t0", f"{b}.0/t0") for k, b in enumerate(roles) for a in roles[:k]})
    if topology == "decentralized":
        return ({f"debater.{i}/t{t}" for i in range(n) for t in (0, 1)},
                {(f"debater.{j}/t0", f"debater.{i}/t1") for i in range(n) for j in range(n) if j != i})
    # the simulated manager delegates once to its first worker, then answers and says TERMINATE
    team = team_spec("gpqa").centralized(n)
    m, w = team.manager, team.workers[0].name
    return ({f"{m}.0/t0", f"{w}.0/t0", f"{m}.0/t1"},
            {(f"{m}.0/t0", f"{w}.0/t0"), (f"{w}.0/t0", f"{m}.0/t1"), (f"{m}.0/t0", f"{m}.0/t1")})


@pytest.mark.parametrize("topology", MULTI)
@pytest.mark.parametrize("n", TEAM_SIZES)
def test_recorded_nodes_edges_seeds_and_vote(server, tmp_path, topology, n):
    batch = specs(topology, n)
    db = tmp_path / "card.sqlite"
    [record] = execute(server.base_url, db, topology, n, batch)
    assert record.status.usable and record.final_output is not None
    nodes, edges = graph(db)
    want_nodes, want_edges = expected(topology, n)
    assert {short for _, short in nodes} == want_nodes and len(nodes) == len(want_nodes)
    assert {parent for parent, _ in nodes} == {record.rollout_id}
    assert edges == want_edges
    assert record.usage.n_llm_calls == len(want_nodes)  # telemetry summed over every agent and round
    scheme = member_seed_scheme(topology)
    for call in model_calls(db):
        assert call["seed"] == turn_seed(scheme, batch[0].seed, call["role"], call["member"], call["turn"])
        if topology == "independent":  # section 2.2: replica i sends seed (rollout seed + i)
            assert call["seed"] == batch[0].seed + call["member"]
        else:  # every other topology keeps its derivation (its recorded calls still replay)
            assert call["seed"] == call_seed(batch[0].seed, call["role"], call["member"], call["turn"])
    meta = record.metadata["topology"]
    assert meta["team_size"] == n and meta["communication_format"] == "freeform"
    if topology in ("independent", "decentralized"):
        vote = meta["vote"]
        assert vote["n_members"] == n and record.final_output.selected_member == vote["selected_member"]
        winners = [b for b in vote["buckets"] if b["key"] == vote["winner_key"]][0]["members"]
        assert record.final_output.selected_member == min(winners)
        assert all(len(b["members"]) <= len(winners) for b in vote["buckets"])
    if topology == "centralized":
        assert meta["stop"] == "terminate" and meta["turns"] == 3 and meta["delegations"]


@pytest.mark.parametrize("topology", MULTI)
def test_same_rollout_twice_gives_identical_records_and_concurrency_changes_no_seed(tmp_path, topology):
    batch = specs(topology, 4, rows=3)
    results, seeds, graphs = {}, {}, {}
    for label, concurrency in (("a", 1), ("b", 1), ("c", 16)):
        sim = start_sim(gpqa_like())
        try:
            db = tmp_path / f"{label}.sqlite"
            results[label] = [r.model_dump(exclude={"latency_seconds"})
                              for r in execute(sim.base_url, db, topology, 4, batch, concurrency)]
            seeds[label] = sorted((e["row_id"], e["seed"], e["key"]) for e in sim.log)
            graphs[label] = graph(db)
        finally:
            sim.stop()
    assert results["a"] == results["b"] == results["c"]
    assert seeds["a"] == seeds["b"] == seeds["c"]
    assert graphs["a"] == graphs["b"] == graphs["c"]


def test_semi_structured_cell_records_format_metrics(server, tmp_path):
    [record] = execute(server.base_url, tmp_path / "s.sqlite", "sequential", 4, specs("sequential", 4),
                       communication="semi_structured")
    meta = record.metadata["topology"]
    assert meta["communication_format"] == "semi_structured"
    assert meta["communication_render_parse_rate"] == 1.0 and meta["communication_inflight_handoffs"] == 3
    assert 0.0 <= meta["communication_parse_rate"] <= 1.0
