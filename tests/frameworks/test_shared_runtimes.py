"""The framework runtimes build their graphs, agents and clients once and reuse them across rollouts (the rollout's
route, prompts and row travel as run configuration): rollouts that run concurrently on the same cached objects,
with different prompts, rows, seeds and gateway routes, record exactly what each records when it runs alone.
Anything per-rollout stored on a shared object (a graph, a model, a client, a route) would leak into the other
rollout's requests, tool events, seeds or outputs here."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cell import parse_cell
from core.contracts import JOB_CONTRACT_VERSION
from core.models import PromptBundle
from engine.runner import RolloutSpec
from engine.runtimes import build_topology, missing_extra
from engine.sim.policy import Policy
from engine.sim.server import SimServer
from tests.frameworks import lg_cards
from tests.frameworks.test_langgraph import _bfcl
from topologies.prompts import seed_bundle

RUNTIMES = [("langgraph", t) for t in ("single", "independent", "sequential", "centralized", "decentralized")] + [
    ("autogen", "centralized"), ("openai_agents", "decentralized"), ("crewai", "sequential")]


@pytest.fixture(scope="module")
def bfcl_sim():
    bench, rows = _bfcl()
    server = SimServer(Policy({bench.name: (bench, rows)}, model_ids=(lg_cards.MODEL,)))
    server.start()
    try:
        yield bench, rows, server.base_url
    finally:
        server.stop()


def _variant(bundle: PromptBundle, note: str) -> PromptBundle:
    return bundle.model_copy(update={"roles": {r: f"{p}\n\n{note}" for r, p in bundle.roles.items()}})


def _card(db: Path) -> tuple[object, ...]:
    return (lg_cards.agent_graph(db), lg_cards.seeds_per_rollout(db), lg_cards.tool_events(db),
            lg_cards.requests_by_turn(db), lg_cards.rollout_seeds(db))


@pytest.mark.parametrize(("framework", "topology_name"), RUNTIMES, ids=[f"{f}-{t}" for f, t in RUNTIMES])
def test_concurrent_rollouts_record_what_each_records_alone(bfcl_sim, tmp_path, framework, topology_name):
    if missing_extra(framework):
        pytest.skip(missing_extra(framework))
    bench, rows, url = bfcl_sim
    topology = build_topology(parse_cell(f"task=bfcl,topology={topology_name},framework={framework}"),
                              contract_version=JOB_CONTRACT_VERSION)
    base = seed_bundle(topology_name, bench.name, topology.roles(bench.name, 4))
    batch = [RolloutSpec(row=rows[i], bundle=_variant(base, f"Variant {i}."), seed=900 + 7 * i, phase="optimize",
                         rollout_key=f"shared:{i}", position=i) for i in range(2)]
    together = tmp_path / "together.sqlite"
    both = lg_cards.execute(url, together, topology, bench, batch, concurrency=2)
    assert all(r.status.usable for r in both), [r.error for r in both]
    alone = []
    for i, spec in enumerate(batch):
        db = tmp_path / f"alone{i}.sqlite"
        alone.extend(lg_cards.execute(url, db, topology, bench, [spec], concurrency=1))
        card = _card(db)
        joint = _card(together)
        assert card[3], "the rollout recorded no request"
        rollouts = {k.split("#")[0] for k in card[4]}  # this rollout's node, attempt suffix cut
        assert len(rollouts) == 1 and len(joint[4]) == 2
        for part, whole in zip(card, joint):
            assert isinstance(part, dict) and isinstance(whole, dict)
            mine = {k: v for k, v in whole.items() if _rollout_of(k).split("#")[0] in rollouts}
            assert part == mine, (framework, topology_name, i)
    assert [(r.final_output, r.score) for r in both] == [(r.final_output, r.score) for r in alone]


def _rollout_of(key: object) -> str:
    return str(key[0] if isinstance(key, tuple) else key)
