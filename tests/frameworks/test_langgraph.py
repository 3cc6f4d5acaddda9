"""LangGraph runtimes (topologies/frameworks/langgraph) on the real engine: gateway, runner, store, simulated endpoint.

* Comparison with native (issue 17): the same rollouts (rows, rollout seeds, seed bundle) of every topology run
  natively and on LangGraph, on BFCL (real bfcl-eval data), MATH (the fixture in its official layout) and MATH with
  agents that call the calculator: the same roles called in the same dependency structure (role-level read edges
  equal, and the protocol's; node-level too), the same multiset of (role, member, turn, request seed) per rollout,
  the same tool events, the same requests and the same outputs. Also for the communication formats and team sizes
  2 and 8, the report-round centralized team, tool loops run into their step limits, the centralized turn cap,
  Single's answer request; Independent's wall-clock cap on LangGraph.
* Jobs: every topology, method `identity` and GEPA (small budget), on a slice of the real BFCL splits: the job
  completes with a closed ledger; the card's agent-turn edges are the protocol's who-reads-whom; every model call
  carries its topology's member seed (Independent replica i: rollout seed + i, section 2.2; the others
  call_seed(rollout seed, role, member, turn)) and the protocol's decoding for its phase, with what the
  framework asked kept apart (`framework_params`).
* Resume: kill -9 a GEPA job (subprocess) half-way through its optimize phase, re-run it: the same artifacts as
  an uninterrupted run, and no model call recorded before the kill is sent to the endpoint again.
* Faults: every fault kind of the simulated endpoint, 20% of requests in all, through the gateway: the GEPA job
  completes with a closed ledger and no card node left open, in every topology.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.registry import get_benchmark
from core.benchmark import Benchmark
from core.protocol import EVALUATION_DECODING, OPTIMIZATION_DECODING, REPETITION_PENALTY
from core.seeds import member_seed_scheme, turn_seed
from core.topology import Topology
from engine.sim.build import build_policy
from engine.sim.faults import FAULT_KINDS, FaultPlan, ScheduledFault
from engine.sim.policy import Policy
from engine.sim.server import SimServer
from topologies.frameworks.langgraph import RUNTIMES
from tests.engine.jobutil import comparable, stored_sim_keys
from tests.engine.faults.matrix import IMMEDIATE_FAULTS, assert_answered_once, job_and_log
from tests.frameworks import lg_cards, lg_job
from tests.topologies.scripted import fake
from topologies.registry import get_topology
from topologies.teams import team_spec

TOPOLOGIES = ("single", "independent", "sequential", "centralized", "decentralized")
MATH_FIXTURE = Path(__file__).resolve().parents[1] / "benchmarks" / "math" / "fixtures" / "good"


def _bfcl() -> tuple[Benchmark, list]:
    bench = get_benchmark("bfcl")
    ids = list(bench.splits().train)
    kinds = ("simple_python", "multiple", "parallel", "parallel_multiple")
    picked = [next(i for i in ids if i.rsplit("_", 1)[0] == kind) for kind in kinds
              if any(i.rsplit("_", 1)[0] == kind for i in ids)]
    return bench, bench.load_rows(picked[:3])


def _math(monkeypatch: pytest.MonkeyPatch, calling: bool = False) -> tuple[Benchmark, list]:
    monkeypatch.setenv("MATH_DATA_DIR", str(MATH_FIXTURE))
    from benchmarks.math.loader import load_pool

    bench = lg_cards.tool_calling_math() if calling else get_benchmark("math")
    return bench, list(load_pool(str(MATH_FIXTURE)).values())[:3]


@pytest.fixture(params=["bfcl", "math", "math_tool_calls"])
def dataset(request, monkeypatch):
    bench, rows = _bfcl() if request.param == "bfcl" else _math(monkeypatch, request.param == "math_tool_calls")
    server = SimServer(Policy({bench.name: (bench, rows)}, model_ids=(lg_cards.MODEL,)))
    server.start()
    try:
        yield bench, rows, server.base_url
    finally:
        server.stop()


def _pair(topology: str, team_size: int) -> tuple[Topology, Topology]:
    return get_topology(topology, team_size), RUNTIMES[topology](team_size=team_size)


def expected_role_edges(task: str, topology: str) -> set[tuple[str, str]]:
    """Protocol section 2's who-reads-whom at team size 4, for the simulated endpoint's behaviour (its manager
    delegates once, to the first worker, then answers)."""
    if topology in ("single", "independent"):
        return set()
    if topology == "sequential":
        roles = [s.role for s in team_spec(task).stages(4)]
        return {(a, b) for k, b in enumerate(roles) for a in roles[:k]}
    if topology == "decentralized":
        return {(team_spec(task).debater_role(),) * 2}
    team = team_spec(task).centralized(4)
    m, w = team.manager, team.workers[0].name
    return {(m, w), (w, m), (m, m)}


def compare(bench: Benchmark, rows: list, url: str, native: Topology, lg: Topology, n: int,
            tmp_path: Path) -> tuple[Path, Path]:
    """Run the same rollouts natively and on LangGraph; assert the same agent-turn nodes and edges, the same
    (role, member, turn, seed) multisets, the same tool events, the same requests and the same outputs."""
    assert lg.framework == "langgraph" and lg.name == native.name  # type: ignore[attr-defined]
    assert lg.roles(bench.name, n) == native.roles(bench.name, n)
    batch = lg_cards.specs(bench, rows, native, n)
    ran = {}
    for label, top in (("native", native), ("langgraph", lg)):
        db = tmp_path / f"{label}.sqlite"
        records = lg_cards.execute(url, db, top, bench, batch)
        assert records and all(r.status != "infrastructure_failure" for r in records), [r.error for r in records]
        ran[label] = (db, records)
    (ndb, nrec), (ldb, lrec) = ran["native"], ran["langgraph"]
    assert lg_cards.role_edges(ldb) == lg_cards.role_edges(ndb)
    assert lg_cards.agent_graph(ldb) == lg_cards.agent_graph(ndb)
    assert lg_cards.seeds_per_rollout(ldb) == lg_cards.seeds_per_rollout(ndb)
    assert lg_cards.tool_events(ldb) == lg_cards.tool_events(ndb)  # the same tools ran, on the same agent turns
    # the prompts are the native ones, message for message (see lg_cards._normalized for what is normalized)
    assert lg_cards.requests_by_turn(ldb) == lg_cards.requests_by_turn(ndb)
    assert [(r.final_output, r.score) for r in lrec] == [(r.final_output, r.score) for r in nrec]
    calls = lg_cards.model_calls(ldb)
    assert calls and all(c.get("framework") == "langgraph" for c in calls)
    return ndb, ldb


@pytest.mark.slow
@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_same_roles_structure_and_seeds_as_native(dataset, tmp_path, topology):
    bench, rows, url = dataset
    n = 1 if topology == "single" else 4
    native, lg = _pair(topology, n)
    _, ldb = compare(bench, rows, url, native, lg, n, tmp_path)
    calling = type(bench) is not type(get_benchmark(bench.name))  # its agents call tools (and read themselves)
    edges, expected = lg_cards.role_edges(ldb), expected_role_edges(bench.name, topology)
    if calling:
        edges, expected = {e for e in edges if e[0] != e[1]}, {e for e in expected if e[0] != e[1]}
    assert edges == expected
    if bench.name == "math" and topology != "centralized":  # the calculator ran (the simulated manager never calls it)
        assert any(lg_cards.tool_events(ldb).values()) == calling


@pytest.fixture(scope="module")
def bfcl_rows():
    bench, rows = _bfcl()
    server = SimServer(Policy({bench.name: (bench, rows)}, model_ids=(lg_cards.MODEL,)))
    server.start()
    try:
        yield bench, rows, server.base_url
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("topology", TOPOLOGIES[1:])
@pytest.mark.parametrize("communication,n", [("semi_structured", 4), ("structured_soft", 4), ("freeform", 2),
                                             ("freeform", 8)])
def test_format_and_team_size_variants_match_native(bfcl_rows, tmp_path, topology, communication, n):
    """Section 3/2.6 variants (LangGraph only): the re-rendered hand-offs and the team at size n are the native
    ones."""
    bench, rows, url = bfcl_rows
    native = get_topology(topology, n, communication)
    lg = RUNTIMES[topology](team_size=n, communication=communication)
    _, ldb = compare(bench, rows[:2], url, native, lg, n, tmp_path)
    marker = {"semi_structured": "[STATUS]", "structured_soft": "JSON_REPORT:", "freeform": None}[communication]
    if marker is not None:  # the format contract is in every agent's system prompt
        assert all(marker in c["request"]["messages"][0]["content"] for c in lg_cards.model_calls(ldb))
    assert {c["member"] for c in lg_cards.model_calls(ldb)} == (set(range(n)) if topology in (
        "independent", "decentralized") else {0})
    roles = {c["role"] for c in lg_cards.model_calls(ldb)}
    assert roles <= set(native.roles(bench.name, n)) and (topology == "centralized" or roles == set(
        native.roles(bench.name, n)))


@pytest.mark.slow
def test_report_round_centralized_matches_native(tmp_path):
    """A team spec in mode report_round (ToolHop's): each worker once, then the manager reads every report."""
    bench = fake("toolhop")
    rows = bench.load_rows(list(bench.splits().train[:2]))
    server = SimServer(Policy({"fake": (bench, rows)}, model_ids=(lg_cards.MODEL,)))
    server.start()
    try:
        _, ldb = compare(bench, rows, server.base_url, get_topology("centralized", 4), RUNTIMES["centralized"](), 4,
                         tmp_path)
    finally:
        server.stop()
    team = team_spec("toolhop").centralized(4)
    assert team.mode == "report_round"
    assert lg_cards.role_edges(ldb) == {(w.name, team.manager) for w in team.workers}


@pytest.fixture(scope="module")
def bfcl_sim():
    server = SimServer(build_policy(["bfcl"]))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def cell(topology: str) -> str:
    return f"task=bfcl,topology={topology},framework=langgraph"


def assert_closed_ledger(job: Path, method: str) -> dict:
    budget = json.loads((job / "optimization.json").read_text())["budget"]
    assert budget["reserved"] == 0
    assert budget["charged"] == budget["successful"] + budget["semantic_failures"] <= budget["maximum"]
    assert budget["attempted"] == budget["charged"] + budget["infrastructure_failures"]
    attempts = [json.loads(line) for line in (job / "optimization" / "attempts.jsonl").read_text().splitlines()
                if line] if (job / "optimization" / "attempts.jsonl").exists() else []
    assert sum(1 for a in attempts if a["charged"]) == budget["charged"]
    if method != "identity":
        assert budget["charged"] > 0
    return budget


def assert_card_calls(db: Path, topology: str) -> None:
    """Every recorded model call: the logical seed of its (rollout, role, member, turn) under the topology's member
    seed scheme, the phase's protocol decoding whatever LangGraph sent, marked as a LangGraph call."""
    seeds, scheme = lg_cards.rollout_seeds(db), member_seed_scheme(topology)
    calls = [c for c in lg_cards.model_calls(db) if not c["node_id"].startswith("reflection/")]  # GEPA's own
    assert calls
    for c in calls:
        rollout = c["node_id"].split("#")[0]
        want = turn_seed(scheme, seeds[rollout], c["role"], c["member"], c["turn"])
        assert c["seed"] == c["params"]["seed"] == want
        decoding = (OPTIMIZATION_DECODING if rollout.startswith("optimize/") else EVALUATION_DECODING).protocol_json()
        params = c["params"]
        assert (params["temperature"], params["top_p"], params["max_tokens"]) == (
            decoding["temperature"], decoding["top_p"], decoding["max_tokens"])
        assert params["repetition_penalty"] == REPETITION_PENALTY
        assert params["chat_template_kwargs"] == {"enable_thinking": decoding["thinking"]}
        assert c["framework"] == "langgraph" and isinstance(c["framework_params"], dict)
        assert not set(c["framework_params"]) & {"temperature", "top_p", "max_tokens", "seed"}


@pytest.mark.slow
@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_job_identity_and_gepa_on_bfcl(bfcl_sim, tmp_path, topology):
    for method in ("identity", "gepa"):
        job = tmp_path / method
        result = lg_job.run(job, bfcl_sim.base_url, cell(topology), method, budget=12, concurrency=6)
        assert result["status"] == "completed" and result["cell"]["framework"] == "langgraph"
        assert_closed_ledger(job, method)
        db = job / "card.sqlite"
        assert lg_cards.role_edges(db) == expected_role_edges("bfcl", topology)
        assert_card_calls(db, topology)
        phases = {c["node_id"].split("/")[0] for c in lg_cards.model_calls(db)}
        assert ("optimize" in phases) == (method != "identity")


ROOT = Path(__file__).resolve().parents[2]
RESUME_BUDGET, RESUME_CONCURRENCY = 12, 4


def job_cmd(out: Path, url: str, topology: str) -> list[str]:
    return [sys.executable, "-m", "tests.frameworks.lg_job", str(out), url, cell(topology), "gepa",
            str(RESUME_BUDGET), str(RESUME_CONCURRENCY)]


def artifacts(out: Path) -> dict:
    return {"optimization": json.loads((out / "optimization.json").read_text()),
            "curve": (out / "optimization" / "learning_curve.jsonl").read_text(),
            "selection": json.loads((out / "selection.json").read_text()),
            "test": json.loads((out / "test.json").read_text()),
            "result": comparable(json.loads((out / "result.json").read_text()))}


def optimize_requests(job: Path) -> int:
    """Endpoint requests of a finished job's optimize phase (its rollouts' model calls and GEPA's reflections)."""
    return sum(1 for c in lg_cards.model_calls(job / "card.sqlite")
               if c["node_id"].startswith(("optimize/", "reflection/")) and not c.get("replayed_from"))


def run_subprocess(out: Path, url: str, topology: str) -> None:
    done = subprocess.run(job_cmd(out, url, topology), cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_kill9_mid_optimize_then_rerun_equals_uninterrupted(tmp_path, topology):
    reference = SimServer(build_policy(["bfcl"]))
    reference.start()
    try:
        lg_job.run(tmp_path / "ref", reference.base_url, cell(topology), "gepa", budget=RESUME_BUDGET,
                   concurrency=RESUME_CONCURRENCY)
    finally:
        reference.stop()
    sent_once = Counter(e["key"] for e in reference.log)  # a request may legitimately repeat (paired seeds)
    kill_after = optimize_requests(tmp_path / "ref") // 2
    assert kill_after >= 4

    server = SimServer(build_policy(["bfcl"]))
    server.start()
    try:
        out = tmp_path / "killed"
        proc = subprocess.Popen(job_cmd(out, server.base_url, topology), cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(server.log) < kill_after and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert proc.poll() is None, "the job finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert not (out / "optimization.json").exists(), "killed after the optimize phase"
        recorded_before_kill = stored_sim_keys(out / "card.sqlite")
        assert recorded_before_kill, "some calls were recorded before the kill (their replay is tested)"
        n_before = len(server.log)
        run_subprocess(out, server.base_url, topology)
        log = server.log
    finally:
        server.stop()

    assert artifacts(out) == artifacts(tmp_path / "ref")
    resent = {e["key"] for e in log[n_before:]} & recorded_before_kill
    assert resent == set(), "a model call recorded before the kill was sent again"
    twice = [k for k, n in Counter(e["key"] for e in log).items() if n > sent_once[k]]
    # only requests in flight at the kill may repeat: one agent per running rollout (all replicas or peers of
    # a round in Independent and Decentralized), plus a reflection call
    parallel = 4 if topology in ("independent", "decentralized") else 1
    assert len(twice) <= RESUME_CONCURRENCY * parallel + 1


def assert_store_consistent(job: Path) -> None:
    conn = sqlite3.connect(str(job / "card.sqlite"))
    try:
        open_nodes = conn.execute("SELECT node_id, status FROM nodes WHERE status IN ('running', 'pending', "
                                  "'ready')").fetchall()
        run_status = conn.execute("SELECT status FROM nodes WHERE level=0").fetchall()
    finally:
        conn.close()
    assert open_nodes == []
    assert run_status == [("completed",)]


@pytest.mark.slow
@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_faults_at_20_percent_through_the_gateway(tmp_path, topology):
    plan = FaultPlan(rates={kind: 0.2 / len(FAULT_KINDS) for kind in FAULT_KINDS}, seed=17, slow_s=1.5)
    server = SimServer(build_policy(["bfcl"]), faults=plan)
    server.start()
    try:
        job = tmp_path / "job"
        result = lg_job.run(job, server.base_url, cell(topology), "gepa", budget=10, concurrency=6, timeout=0.75)
        log = server.log
    finally:
        server.stop()
    assert result["status"] == "completed"
    faulted = [e for e in log if e.get("fault")]
    assert faulted, "faults were injected"
    budget = assert_closed_ledger(job, "gepa")
    assert budget["charged"] > 0
    assert_store_consistent(job)
    conn = sqlite3.connect(str(job / "card.sqlite"))
    try:
        records = [json.loads(r) for (r,) in conn.execute("SELECT record FROM rollouts")]
        failed_calls = conn.execute("SELECT COUNT(*) FROM events WHERE event_type='model_call' AND ok=0").fetchone()[0]
    finally:
        conn.close()
    # the faults reached LangGraph through the gateway and the attempts were retried with the same seed
    assert failed_calls > 0 and any(r["attempts"] > 1 for r in records)


@pytest.mark.slow
@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_step_limits_match_native(tmp_path, monkeypatch, topology):
    """Agents that call a tool on every reply run into their step limits exactly where native agents do: the same
    number of model calls, the tools of the last reply executed, the same step-limit metadata."""
    bench, rows = _math(monkeypatch)
    server = SimServer(lg_cards.ToolLoopPolicy({bench.name: (bench, rows[:2])}, model_ids=(lg_cards.MODEL,),
                                               delegate="computation_worker"))
    server.start()
    n = 1 if topology == "single" else 4
    try:
        native, lg = _pair(topology, n)
        _, ldb = compare(bench, rows[:2], server.base_url, native, lg, n, tmp_path)
    finally:
        server.stop()
    calls = lg_cards.model_calls(ldb)
    tools = lg_cards.tool_events(ldb)
    if topology == "single":
        from topologies.single import step_limit

        per_rollout = Counter(c["node_id"].rsplit("/", 2)[0] for c in calls)
        assert set(per_rollout.values()) == {step_limit(bench)}
        # every reply called the calculator, the last one's call ran too
        assert all(sum(1 for e in t if '"tool_call"' in e) == step_limit(bench) for t in tools.values())
    if topology == "centralized":  # the delegated worker ran its tool loop to its step limit
        team = team_spec("math").centralized(4)
        worker_calls = Counter(c["node_id"].rsplit("/", 2)[0] for c in calls if c["role"] == "computation_worker")
        assert set(worker_calls.values()) == {min(team.worker_step_limit, team.max_turns - 1)}
    assert any(tools.values())


@pytest.mark.slow
def test_centralized_turn_cap_matches_native(bfcl_rows, tmp_path):
    """A manager that never says TERMINATE: the turn cap (BFCL's, every agent call counted) ends the rollout at the
    same call as native, including a delegation chosen on the last turn, which is not run."""
    bench, rows, _ = bfcl_rows
    server = SimServer(lg_cards.ToolLoopPolicy({bench.name: (bench, rows[:2])}, model_ids=(lg_cards.MODEL,),
                                               endless_manager=True))
    server.start()
    try:
        _, ldb = compare(bench, rows[:2], server.base_url, get_topology("centralized", 4), RUNTIMES["centralized"](),
                         4, tmp_path)
    finally:
        server.stop()
    cap = team_spec("bfcl").centralized(4).max_turns
    per_rollout = Counter(c["node_id"].rsplit("/", 2)[0] for c in lg_cards.model_calls(ldb))
    assert set(per_rollout.values()) == {cap}


def test_single_answer_request_matches_native(tmp_path):
    """A benchmark with an answer request (ToolHop's "<answer>" tag): a final message without the marker gets one
    more call on the solver's route, reading its last call, exactly as natively."""
    bench = fake("toolhop")
    real = get_benchmark("toolhop")
    bench.answer_request, bench.answer_marker = real.answer_request, real.answer_marker  # type: ignore[misc]
    rows = bench.load_rows(list(bench.splits().train[:2]))
    server = SimServer(Policy({"fake": (bench, rows)}, model_ids=(lg_cards.MODEL,)))
    server.start()
    try:
        _, ldb = compare(bench, rows, server.base_url, get_topology("single", 1), RUNTIMES["single"](), 1, tmp_path)
    finally:
        server.stop()
    calls = lg_cards.model_calls(ldb)
    assert sorted(c["turn"] for c in calls) == [0, 0, 1, 1]
    assert all(real.answer_request in c["request"]["messages"][-1]["content"] for c in calls if c["turn"] == 1)
    assert lg_cards.role_edges(ldb) == {("solver", "solver")}


@pytest.mark.slow
def test_independent_wall_clock_cap_makes_a_late_replica_abstain(tmp_path):
    """A replica past the per-row wall-clock cap is cancelled inside LangGraph (its HTTP request abandoned) and
    abstains; the attempt itself is fine and the vote runs over the others, as natively."""
    bench = fake("gpqa")
    bench.independent_wall_clock_s = 1.0  # type: ignore[misc]
    rows = bench.load_rows(list(bench.splits().train[:1]))
    plan = FaultPlan(schedule=[ScheduledFault(kind="slow", nth=1)], slow_s=4.0)  # the 2nd request to arrive hangs
    server = SimServer(Policy({"fake": (bench, rows)}, model_ids=(lg_cards.MODEL,)), faults=plan)
    server.start()
    try:
        lg = RUNTIMES["independent"]()
        records = lg_cards.execute(server.base_url, tmp_path / "lg.sqlite", lg, bench,
                                   lg_cards.specs(bench, rows, lg, 4))
    finally:
        server.stop()
    (record,) = records
    assert record.status in ("success", "semantic_failure") and record.error is None
    meta = record.final_output.metadata
    assert len(meta["timed_out_members"]) == 1 and meta["wall_clock_cap_s"] == 1.0
    assert meta["vote"]["selected_member"] not in meta["timed_out_members"]


@pytest.mark.slow
@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_each_answer_through_the_gateway_is_recorded_once_and_never_requested_again(tmp_path, topology):
    """A failed call must not take its team's in-flight calls down with it (tests/engine/faults/test_answered_once)."""
    server = SimServer(build_policy(["bfcl"]), faults=IMMEDIATE_FAULTS).start()
    job = tmp_path / "job"
    result, log = job_and_log(server, lambda: lg_job.run(job, server.base_url, cell(topology), "gepa", budget=10,
                                                         concurrency=6, timeout=10.0))
    assert result["status"] == "completed"
    assert_answered_once(log, job)
