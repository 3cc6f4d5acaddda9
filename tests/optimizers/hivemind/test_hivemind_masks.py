"""Coalition masks are honoured by the centralized topology (the one native topology that claims them), proved from
the recorded requests of a HiveMind job (smallest budget: one cycle, 8 coalitions x 1 row + 2 validation rollouts):
in every masked rollout the masked workers sent nothing and no request names them (no delegate tool, not listed,
nothing of theirs in a shared conversation); present workers do run; the runtime's acknowledgement is in the record;
final validation and test rollouts carry no mask, and the runner refuses a mask outside the optimize phase or on a
topology that does not claim masks."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio
import pytest

from core.coalition import MemberMask
from core.errors import ContractError
from core.models import PromptBundle
from engine.job.run_job import run_job
from engine.runner import RetryPolicy, RolloutSpec, Runner
from tests.fakebench import FakeBench
from tests.optimizers.hivemind.test_hivemind_jobs import BFCL, cfg_for
from core.contracts import CONTRACT_MARKER
from topologies.centralized import Centralized
from topologies.sequential import PRIOR_STAGE
from topologies.single import Single

WORKERS = ("inspector_worker", "caller_worker", "validator_worker")


def card(db: Path) -> tuple[list[tuple[str, str, dict]], list[tuple[str, str, dict]]]:
    conn = sqlite3.connect(str(db))
    try:
        rollouts = [(node, phase, json.loads(rec)) for node, phase, rec in
                    conn.execute("SELECT node_id, phase, record FROM rollouts").fetchall()]
        calls = [(node, worker, json.loads(payload)) for node, worker, payload in conn.execute(
            "SELECT e.node_id, e.worker_binding_key, e.payload FROM events e WHERE e.event_type='model_call'")]
    finally:
        conn.close()
    return rollouts, calls


CELLS = {"centralized": BFCL, "sequential": "task=bfcl,topology=sequential,team_size=4",
         "independent": "task=bfcl,topology=independent,team_size=4",
         "decentralized": "task=bfcl,topology=decentralized,team_size=4"}
# coalitions run in the one cycle of the smallest budget: centralized 2^3 (the empty one = the manager alone),
# a 4-player game 2^4 - 1 (nobody to run in the empty one: worth 0, no rollout)
RUN = {"centralized": 8, "sequential": 15, "independent": 15, "decentralized": 15}
BUDGET = {"centralized": 10, "sequential": 17, "independent": 17, "decentralized": 17}


@pytest.fixture(scope="module", params=list(CELLS))
def topology_job(request, tmp_path_factory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp(request.param) / "job"
    anyio.run(run_job, cfg_for(out, CELLS[request.param], budget=BUDGET[request.param], smoke=5))
    return request.param, out


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hm") / "job"
    anyio.run(run_job, cfg_for(out, BFCL, budget=10, smoke=5))
    return out


def player(topology: str, binding: str) -> str:
    role, member = binding.split(".")
    return f"{role}#{member}" if topology in ("independent", "decentralized") else role


def leaks(topology: str, hidden: set[str], text: str) -> list[str]:
    """The traces of a masked member in a request's text, by what each topology shows of one member to another."""
    if topology == "centralized":
        return [w for w in hidden if w in text]  # never offered, listed or quoted
    if topology == "sequential":
        return [w for w in hidden if f"{PRIOR_STAGE}: {w}" in text]
    if topology == "decentralized":
        return [w for w in hidden if f"PEER {w.split('#')[1]}:" in text]
    return []  # independent replicas read nobody


def test_masked_members_send_nothing_and_are_read_by_no_one(topology_job):
    topology, out = topology_job
    rollouts, calls = card(out / "card.sqlite")
    masked = [(node, rec) for node, phase, rec in rollouts if "optimizer_control" in rec["metadata"]]
    assert len(masked) == RUN[topology]
    everyone = set(masked[0][1]["metadata"]["optimizer_control"]["present"]) | set(
        masked[0][1]["metadata"]["optimizer_control"]["masked"])
    seen_masks = set()
    for node, rec in masked:
        ack = rec["metadata"]["optimizer_control"]
        assert ack["acknowledged"] and ack["runtime"] == "native" and ack["kind"] == "member_mask" and ack["rule"]
        hidden = set(ack["masked"])
        seen_masks.add(frozenset(hidden))
        assert set(ack["present"]) == everyone - hidden and ack["present"]
        mine = [(binding, payload) for call_node, binding, payload in calls if call_node.startswith(node + "#")]
        callers = {player(topology, binding) for binding, _ in mine}
        assert callers and not callers & hidden  # masked members sent nothing
        if topology == "centralized":
            assert "manager" in callers and callers <= set(ack["present"])
        else:
            assert callers == set(ack["present"])  # every present member ran
        for _, payload in mine:
            assert not leaks(topology, hidden, json.dumps(payload["request"]))  # read by no one
        if topology == "sequential":  # the last present stage answers: it carries the output contract
            last = ack["present"][-1]
            systems = [p["request"]["messages"][0]["content"] for b, p in mine if b.split(".")[0] == last]
            assert systems and all(CONTRACT_MARKER in text for text in systems)
    assert len(seen_masks) == RUN[topology]


def test_centralized_offers_the_manager_exactly_the_present_workers(job):
    rollouts, calls = card(job / "card.sqlite")
    for node, phase, rec in rollouts:
        if "optimizer_control" not in rec["metadata"]:
            continue
        present = set(WORKERS) - set(rec["metadata"]["optimizer_control"]["masked"])
        manager_tools = {t["function"]["name"] for n, w, p in calls if n.startswith(node + "#")
                         and w.startswith("manager") for t in p["request"].get("tools") or []}
        assert manager_tools == {f"delegate_to_{w}" for w in present}


def test_no_mask_reaches_final_validation_or_test(job):
    rollouts, calls = card(job / "card.sqlite")
    final = [(node, rec) for node, phase, rec in rollouts if phase in ("validation", "test")]
    assert final and all("optimizer_control" not in rec["metadata"] for _, rec in final)
    for node, _ in final:  # every worker is offered to the manager in final evaluation
        tools = {t["function"]["name"] for n, w, p in calls if n.startswith(node + "#") and w.startswith("manager")
                 for t in p["request"].get("tools") or []}
        assert tools == {f"delegate_to_{w}" for w in WORKERS}


def _runner(topology) -> Runner:
    return Runner(store=None, pool=None, bench=FakeBench(n_train=4), topology=topology,  # type: ignore[arg-type]
                  run_node="run", retry=RetryPolicy(base_delay=0.0), concurrency=1)


@pytest.mark.parametrize("phase", ["validation", "test"])
def test_the_runner_refuses_a_mask_outside_the_optimize_phase(phase):
    bench = FakeBench(n_train=4)
    row = bench.load_rows(list(bench.splits().train[:1]))[0]
    spec = RolloutSpec(row=row, bundle=PromptBundle(roles={"solver": "x"}), seed=1, phase=phase, rollout_key="k",
                       control=MemberMask(("caller_worker",)))
    with pytest.raises(ContractError, match="optimize-only"):
        anyio.run(lambda: _runner(Centralized(4)).run_batch([spec], None))  # type: ignore[arg-type]


def test_the_runner_refuses_a_mask_on_a_topology_that_does_not_claim_masks():
    bench = FakeBench(n_train=4)
    row = bench.load_rows(list(bench.splits().train[:1]))[0]
    spec = RolloutSpec(row=row, bundle=PromptBundle(roles={"solver": "x"}), seed=1, phase="optimize",
                       rollout_key="k", control=MemberMask(("solver",)))
    with pytest.raises(ContractError, match="does not honour coalition masks"):
        anyio.run(lambda: _runner(Single()).run_batch([spec], None))  # type: ignore[arg-type]
