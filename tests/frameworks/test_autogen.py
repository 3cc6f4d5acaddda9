"""Centralized on AutoGen (topologies/frameworks/autogen.py) for real: SelectorGroupChat agents talking to the simulated
endpoint through the engine's recording gateway, in jobs (BFCL identity, a GEPA job, 20% faults, kill -9 resume)
and through the Runner next to the native centralized topology.

The simulated manager delegates once (to its first worker) and then answers with TERMINATE; AutoGen's model-based
selector (a recorded call of role `selector`) picks the worker the manager's delegation names.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.registry import get_benchmark
from core.benchmark import Benchmark
from core.seeds import call_seed
from engine.sim.build import build_policy
from engine.sim.faults import FAULT_KINDS, FaultPlan
from engine.sim.server import SimServer
from tests.conftest import start_sim
from tests.engine.faults.matrix import (IMMEDIATE_FAULTS, assert_answered_once, assert_closed_ledger,
                                        assert_store_consistent, job_and_log, small_bench)
from tests.engine.jobutil import run, stored_sim_keys
from tests.frameworks import auto_job
from tests.frameworks.auto_card import decoding_for, model_calls, records, rollout_of
from tests.frameworks.auto_runner import execute, execute_with_deadline, role_edges, specs, tool_events, turns
from tests.frameworks.auto_tools import add_bench, start_scripted_sim
from tests.optimizers.test_resume import artifacts
from topologies.teams import team_spec

GPQA_CELL = "task=gpqa,topology=centralized,framework=autogen"
ROOT = Path(__file__).resolve().parents[2]
RESUME_BUDGET = 40
KILL_AFTER = 60  # simulated-endpoint requests: past the 16 of the baseline validation, inside the optimize phase


def expected_role_edges(task: str) -> set[tuple[str, str]]:
    """(role read, reading role): the manager's first turn is read by the selector, by the worker it delegated to
    (the shared conversation) and by its own next turn, which also reads that worker's report."""
    team = team_spec(task).centralized(4)
    m, w = team.manager, team.workers[0].name
    return {(m, "selector"), (m, w), (w, m), (m, m)}


def assert_calls_seeded_and_decoded(job: Path, roles: set[str]) -> None:
    """Every model call: seed = call_seed(rollout seed, role, member, turn); params = the protocol's decoding of
    its phase whatever AutoGen asked; what AutoGen asked is kept as framework_params."""
    seeds = {r["rollout_id"]: (r["request_seed"], r["phase"]) for r in records(job)}
    calls = [(node, c) for node, c in model_calls(job / "card.sqlite") if "role" in c]  # not the reflection's
    assert calls and {c["role"] for _, c in calls} == roles
    for node, call in calls:
        seed, phase = seeds[rollout_of(node)]
        assert call["seed"] == call_seed(seed, call["role"], call["member"], call["turn"]), node
        decoding = decoding_for(phase)
        assert {k: call["params"][k] for k in ("temperature", "top_p", "max_tokens")} == {
            k: decoding[k] for k in ("temperature", "top_p", "max_tokens")}
        assert call["framework"] == "autogen" and isinstance(call["framework_params"], dict)
        assert "temperature" not in call["framework_params"]  # AutoGen asked none; the protocol's was sent
        if call["role"] == "manager":  # offered its delegate tools: AutoGen asked tool_choice=auto
            assert call["framework_params"] == {"tool_choice": '"auto"'}


def assert_rollouts_are_autogen_runs(job: Path, task: str) -> None:
    team = team_spec(task).centralized(4)
    usable = [r for r in records(job) if r["final_output"] is not None]
    assert usable
    for record in usable:
        meta = record["final_output"]["metadata"]
        assert meta["framework"] == "autogen" and meta["stop"] == "terminate"
        assert meta["delegations"] == [team.workers[0].name] and meta["selector_calls"] == 1
        assert meta["turns"] == 3 and record["usage"]["n_llm_calls"] == 4  # + the selector's call
        assert "TERMINATE" not in (record["final_output"]["text"] or "")


@pytest.mark.slow
def test_bfcl_identity_job_card_edges_seeds_and_decoding(tmp_path: Path) -> None:
    server = SimServer(build_policy(["bfcl"]))
    server.start()
    try:
        result = auto_job.run(tmp_path / "job", server.base_url, "identity")
    finally:
        server.stop()
    job = tmp_path / "job"
    assert result["status"] == "completed" and result["registry_key"] == "centralized_autogen"
    assert result["source_tables"] == [2]
    assert result["test"]["failure_counts"]["baseline"]["infrastructure_failures"] == 0
    assert_closed_ledger(job)
    assert_store_consistent(job)
    assert role_edges(job / "card.sqlite") == expected_role_edges("bfcl")
    team = team_spec("bfcl").centralized(4)
    assert_calls_seeded_and_decoded(job, {team.manager, team.workers[0].name, "selector"})
    assert_rollouts_are_autogen_runs(job, "bfcl")


@pytest.mark.slow
def test_gepa_job_on_autogen_closes_its_ledger(tmp_path: Path) -> None:
    server = start_sim(small_bench())
    try:
        result = run(tmp_path / "job", server.base_url, small_bench(), cell=GPQA_CELL, method="gepa", budget=10)
    finally:
        server.stop()
    job = tmp_path / "job"
    assert result["status"] == "completed"
    budget = assert_closed_ledger(job)
    assert budget["charged"] == 10 and budget["infrastructure_failures"] == 0
    assert_store_consistent(job)
    assert role_edges(job / "card.sqlite") == expected_role_edges("gpqa")
    team = team_spec("gpqa").centralized(4)
    assert_calls_seeded_and_decoded(job, {team.manager, team.workers[0].name, "selector"})
    assert_rollouts_are_autogen_runs(job, "gpqa")
    assert any(r["phase"] == "optimize" for r in records(job))


def test_roles_are_the_native_topologys() -> None:
    from topologies.frameworks.autogen import AutogenCentralized
    from topologies.centralized import Centralized
    for task in ("gpqa", "math", "hotpotqa", "lcb", "apps", "bfcl", "swe", "toolhop", "apibank"):
        assert AutogenCentralized().roles(task, 4) == Centralized().roles(task, 4)


def _parity_setup(task: str) -> tuple[Benchmark, SimServer, str]:
    if task == "gpqa":
        return small_bench(), start_sim(small_bench()), "test-model"
    if task == "gpqa+tools":
        return add_bench(), start_scripted_sim(add_bench()), "test-model"
    if task == "gpqa+3 delegations":
        return small_bench(), start_scripted_sim(small_bench(), delegations=3), "test-model"
    bench = get_benchmark("bfcl")
    server = SimServer(build_policy(["bfcl"]))
    server.start()
    return bench, server, "simulated-policy"


@pytest.mark.slow
@pytest.mark.parametrize("task", ["gpqa", "gpqa+tools", "gpqa+3 delegations", "bfcl"])
def test_same_rollouts_as_native_apart_from_the_selector(tmp_path: Path, task: str) -> None:
    """Same rollout seeds through the Runner: the AutoGen run calls the same roles in the same read structure
    with the same request seeds and system prompts as native centralized, plus the selector's call, runs the
    same tool calls (gpqa+tools: the delegated worker calls `add` once, recorded against its first call), and
    gives the same final answers. With three delegations, each worker reads the shared conversation so far (the
    manager's turns and the earlier workers' reports) exactly as native's workers do."""
    bench, server, model = _parity_setup(task)
    try:
        rows = bench.load_rows(list(bench.splits().validation[:3]))
        batch = specs(bench, rows, task)
        got = {fw: execute(server.base_url, tmp_path / f"{fw}.sqlite", bench, fw, batch, model=model)
               for fw in ("native", "autogen")}
    finally:
        server.stop()
    assert all(r.status.usable for r in got["autogen"])
    assert [r.final_output.text for r in got["autogen"]] == [r.final_output.text for r in got["native"]]
    assert [r.score for r in got["autogen"]] == [r.score for r in got["native"]]
    short = {fw: turns(tmp_path / f"{fw}.sqlite") for fw in got}
    native_nodes = sorted(short["native"][0].values())
    autogen_nodes = sorted(v for v in short["autogen"][0].values() if not v.startswith("selector."))
    selections = sum(r.final_output.metadata["selector_calls"] for r in got["autogen"])
    assert autogen_nodes == native_nodes and len(short["autogen"][0]) == len(native_nodes) + selections >= len(rows)
    assert {(a, b) for a, b in short["autogen"][1] if "/selector." not in a + b} == short["native"][1]  # node level
    edges = role_edges(tmp_path / "autogen.sqlite")
    assert {e for e in edges if "selector" not in e} == role_edges(tmp_path / "native.sqlite")
    assert ("manager", "selector") in edges and not any(e[0] == "selector" for e in edges)  # nobody reads it
    calls = {fw: [c for _, c in model_calls(tmp_path / f"{fw}.sqlite")] for fw in got}

    def keyed(fw: str) -> list[tuple[int, str, int, str]]:
        return sorted((c["seed"], c["role"], c["turn"], c["request"]["messages"][0]["content"])
                      for c in calls[fw] if c["role"] != "selector")
    assert keyed("autogen") == keyed("native")
    tools = {fw: tool_events(tmp_path / f"{fw}.sqlite") for fw in got}
    assert tools["autogen"] == tools["native"]
    if task == "gpqa+tools":
        worker = team_spec("gpqa").centralized(4).workers[0].name
        assert [e[1:] for e in tools["autogen"]][:2] == [(f"{worker}.0/t0", "tool_call", 'add {"a": 2, "b": 3}'),
                                                       (f"{worker}.0/t0", "tool_result", 'add "5"')]
        assert len(tools["autogen"]) == 2 * len(rows)
        assert all(r.final_output.metadata["last_tool_result"] == "5" for r in got["autogen"])
    if task == "gpqa+3 delegations":
        team = team_spec("gpqa").centralized(4)
        names = [w.name for w in team.workers]
        assert all(r.final_output.metadata["delegations"] == names for r in got["autogen"])
        assert all(r.final_output.metadata["selector_calls"] == 3 for r in got["autogen"])
        assert {(names[0], names[1]), (names[0], names[2]), (names[1], names[2])} <= edges  # the shared conversation
        assert {(w, "selector") for w in names[:2]} <= edges


def test_report_round_datasets_run_the_native_report_round(tmp_path: Path) -> None:
    """ToolHop / API-Bank centralized (team mode `report_round`): the AutoGen label runs the same code as native
    (section 2.4): each worker once, tools executed, then the manager's one answer; identical records."""
    bench = add_bench()
    bench.name = "toolhop"  # type: ignore[misc]  # the toolhop team spec (report_round) applies
    server = start_scripted_sim(bench)
    try:
        rows = bench.load_rows(list(bench.splits().validation[:2]))
        batch = specs(bench, rows, "toolhop")
        got = {fw: execute(server.base_url, tmp_path / f"{fw}.sqlite", bench, fw, batch)
               for fw in ("native", "autogen")}
    finally:
        server.stop()
    team = team_spec("toolhop").centralized(4)
    for native, autogen in zip(got["native"], got["autogen"]):
        assert autogen.status.usable and autogen.final_output.text == native.final_output.text
        meta = autogen.final_output.metadata
        assert meta["mode"] == "report_round" and meta["framework"] == "autogen"
        assert {k: v for k, v in meta.items() if k != "framework"} == native.final_output.metadata
    assert turns(tmp_path / "autogen.sqlite") == turns(tmp_path / "native.sqlite")
    assert tool_events(tmp_path / "autogen.sqlite") == tool_events(tmp_path / "native.sqlite") != []
    assert role_edges(tmp_path / "autogen.sqlite") == {(w.name, team.manager) for w in team.workers} | {
        (w.name, w.name) for w in team.workers if w.tools}


@pytest.mark.slow
def test_attempt_deadline_cancels_the_group_chat_and_leaves_nothing_running(tmp_path: Path) -> None:
    """A rollout attempt past its deadline is cancelled inside AutoGen's group chat: the attempt ends as a timeout
    (an infrastructure failure, retried), no AutoGen task outlives it and nothing is sent afterwards."""
    bench = small_bench()
    server = start_sim(bench, delay_s=0.3)  # 4 calls of 0.3 s: past a 0.5 s attempt deadline
    try:
        batch = specs(bench, bench.load_rows(list(bench.splits().validation[:2])), "deadline")
        got, alive = execute_with_deadline(server.base_url, tmp_path / "card.sqlite", bench, batch, 0.5)
        sent_after = len(server.log)
        time.sleep(0.5)
        assert len(server.log) == sent_after
    finally:
        server.stop()
    assert [(r.status.value, r.error_kind) for r in got] == [("infrastructure_failure", "timeout")] * 2
    assert all(r.attempts > 1 for r in got)
    assert alive == []


@pytest.mark.slow
def test_faults_at_20_percent_through_the_gateway(tmp_path: Path) -> None:
    """Every fault kind of the simulated endpoint, 20% of requests in all (a `slow` answer outlasts the 0.5 s read
    timeout): the job completes, its ledger closed and its card consistent."""
    plan = FaultPlan(rates={k: 0.2 / len(FAULT_KINDS) for k in FAULT_KINDS}, seed=13, slow_s=1.0)
    server = start_sim(small_bench(), faults=plan)
    try:
        result = run(tmp_path / "job", server.base_url, small_bench(), cell=GPQA_CELL, method="gepa", budget=10,
                     timeout=0.5)
        counts = server.fault_counts()
    finally:
        server.stop()
    job = tmp_path / "job"
    assert result["status"] == "completed"
    budget = assert_closed_ledger(job)
    assert_store_consistent(job)
    assert sum(counts.values()) > 10 and len([k for k, n in counts.items() if n]) >= 5, counts
    assert budget["infrastructure_failures"] > 0  # a fault failed the attempt through the gateway; it was retried
    retried = [r for r in records(job) if r["attempts"] > 1 and r["final_output"] is not None]
    assert retried and all(r["final_output"]["metadata"]["framework"] == "autogen" for r in retried)


def job_cmd(out: Path, url: str) -> list[str]:
    return [sys.executable, "-m", "tests.frameworks.auto_job", str(out), url, "gepa", str(RESUME_BUDGET)]


@pytest.mark.slow
def test_kill9_mid_optimization_then_rerun_equals_uninterrupted(tmp_path: Path) -> None:
    """kill -9 inside the optimize phase, re-run: the same artifacts as an uninterrupted run, and no model call
    recorded before the kill (agents' and selector's through the gateway, reflection) is sent again."""
    reference = start_sim(small_bench(), delay_s=0.002)
    try:
        done = subprocess.run(job_cmd(tmp_path / "ref", reference.base_url), cwd=ROOT, capture_output=True,
                              text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        uninterrupted = Counter(e["key"] for e in reference.log)
    finally:
        reference.stop()
    server = start_sim(small_bench(), delay_s=0.002)
    try:
        out = tmp_path / "killed"
        proc = subprocess.Popen(job_cmd(out, server.base_url), cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(server.log) < KILL_AFTER and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert proc.poll() is None, "the job finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert (out / "card.sqlite").exists() and not (out / "optimization.json").exists()
        recorded_before_kill = stored_sim_keys(out / "card.sqlite")
        n_before = len(server.log)
        again = subprocess.run(job_cmd(out, server.base_url), cwd=ROOT, capture_output=True, text=True,
                               timeout=240)
        assert again.returncode == 0, again.stderr[-3000:]
        log = server.log
    finally:
        server.stop()
    assert artifacts(out) == artifacts(tmp_path / "ref")
    assert recorded_before_kill, "some calls were recorded before the kill"
    assert {e["key"] for e in log[n_before:]} & recorded_before_kill == set(), "a recorded call was sent again"
    # a selector's request holds no prompt of the bundle: two candidates' rollouts of a row may send the same one,
    # in the uninterrupted run too; beyond those, only the calls in flight at the kill were sent twice
    extra = Counter(e["key"] for e in log) - uninterrupted
    assert sum(extra.values()) <= 2 * auto_job.CONCURRENCY
    assert "speaker" in {e["kind"] for e in log[:n_before]}  # the selector's calls were among those recorded
    replays = [c for _, c in model_calls(out / "card.sqlite") if c.get("replayed_from")]
    assert not any("replay_mismatch" in c for c in replays)  # AutoGen re-sent exactly what it had sent


@pytest.mark.slow
def test_each_answer_through_autogen_is_recorded_once_and_never_requested_again(tmp_path: Path) -> None:
    """tests/engine/faults/test_answered_once, on the AutoGen runtime."""
    server = start_sim(small_bench(), faults=IMMEDIATE_FAULTS)
    result, log = job_and_log(server, lambda: run(tmp_path / "job", server.base_url, small_bench(), cell=GPQA_CELL,
                                                  method="gepa", budget=10, timeout=10.0))
    assert result["status"] == "completed"
    assert_answered_once(log, tmp_path / "job")
