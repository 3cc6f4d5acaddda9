"""Replica seeds on the wire (issue 35 item 5), protocol-v1 section 2.2, Independent: "Replica i sends requests
with seed i (otherwise identical)": replica i of a rollout seeded s sends (s + i) mod 2^31 - 1 on EVERY request,
natively and on LangGraph (through the recording gateway), for teams of 2, 4, 8 and 10.

The agents call the calculator (MATH fixture, tool-calling simulated agent), so each replica makes two requests
(the tool call, then the answer after the tool result): both carry the replica's seed. Seeds are read twice: from
the requests the simulated endpoint received, and from the card's recorded `model_call` events. The other
topologies keep their per-(role, member, turn) hash (core.seeds.call_seed), on the wire too."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from core.seeds import call_seed
from engine.sim.policy import Policy
from engine.sim.server import SimServer
from topologies.frameworks.langgraph import RUNTIMES
from tests.frameworks import lg_cards
from topologies.registry import get_topology

MATH_FIXTURE = Path(__file__).resolve().parents[1] / "benchmarks" / "math" / "fixtures" / "good"
S22 = "protocol-v1 §2.2: replica i sends seed (rollout seed + i) on every request"


@pytest.fixture(scope="module")
def calling_math():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MATH_DATA_DIR", str(MATH_FIXTURE))
        from benchmarks.math.loader import load_pool

        bench = lg_cards.tool_calling_math()
        rows = list(load_pool(str(MATH_FIXTURE)).values())[:2]
        server = SimServer(Policy({bench.name: (bench, rows)}, model_ids=(lg_cards.MODEL,)))
        server.start()
        try:
            yield bench, rows, server
        finally:
            server.stop()


def _run(calling_math, tmp_path: Path, topology: str, runtime: str, n: int):
    bench, rows, server = calling_math
    top = get_topology(topology, n) if runtime == "native" else RUNTIMES[topology](team_size=n)
    batch = lg_cards.specs(bench, rows, top, n)
    before = len(server.log)
    records = lg_cards.execute(server.base_url, tmp_path / f"{runtime}.sqlite", top, bench, batch)
    assert records and all(r.status.usable for r in records), [r.error for r in records]
    wire = [e for e in server.log[before:] if e.get("row_id") is not None]
    return batch, records, wire, lg_cards.model_calls(tmp_path / f"{runtime}.sqlite")


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["native", "langgraph"])
@pytest.mark.parametrize("n", [2, 4, 8, 10])
def test_replica_i_sends_rollout_seed_plus_i_on_every_request(calling_math, tmp_path, runtime, n):
    batch, records, wire, calls = _run(calling_math, tmp_path, "independent", runtime, n)
    # on the wire: per row, each seed s + i arrives exactly twice (two turns), and no other seed arrives
    for spec in batch:
        got = Counter(e["seed"] for e in wire if e["row_id"] == spec.row.id)
        assert got == Counter({spec.seed + i: 2 for i in range(n)}), S22
    # in the card: every recorded call of member i, every turn, carries rollout seed + i
    rollout_seed = {r.rollout_id: r.request_seed for r in records}
    assert len(calls) == 2 * n * len(batch)
    for c in calls:
        s = rollout_seed[c["node_id"].rsplit("/", 2)[0].split("#")[0]]
        assert c["seed"] == c["params"]["seed"] == s + c["member"], S22
    assert {(c["member"], c["turn"]) for c in calls} == {(i, t) for i in range(n) for t in (0, 1)}
    # "otherwise identical": the replicas' first requests differ in nothing but the seed
    firsts = [c["request"]["messages"] for c in calls if c["turn"] == 0 and c["node_id"].startswith(
        records[0].rollout_id)]
    assert len(firsts) == n and all(m == firsts[0] for m in firsts)


@pytest.mark.parametrize("topology", ["sequential", "centralized", "decentralized"])
def test_other_topologies_keep_the_turn_hash_seeds_on_the_wire(calling_math, tmp_path, topology):
    """Their members are no replicas: call (role, member, turn) still sends call_seed(rollout seed, role, member,
    turn), so a job directory they wrote before replica seeds replays unchanged."""
    batch, records, wire, calls = _run(calling_math, tmp_path, topology, "native", 4)
    rollout_seed = {r.rollout_id: r.request_seed for r in records}
    want = Counter()
    for c in calls:
        s = rollout_seed[c["node_id"].rsplit("/", 2)[0].split("#")[0]]
        assert c["seed"] == call_seed(s, c["role"], c["member"], c["turn"])
        want[c["seed"]] += 1
    assert Counter(e["seed"] for e in wire) == want
    if topology == "decentralized":  # peers 1..3 do not send rollout seed + i
        assert not {c["seed"] for c in calls if c["member"] > 0} & {spec.seed + i for spec in batch
                                                                     for i in range(1, 4)}
