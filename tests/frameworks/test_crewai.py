"""Sequential on CrewAI (topologies/frameworks/crewai.py) through the recording gateway, on the simulated endpoint: jobs complete
with a closed ledger; the card shows the pipeline's who-reads-whom (each stage's first call reads the last call of
every earlier stage, its later calls its own previous one); every call carries its logical seed and the protocol's
decoding whatever CrewAI asked; kill -9 and re-run gives the uninterrupted result without re-sending a recorded call;
faults at 20% (every kind) leave a completed job with a closed ledger; CrewAI contacts nothing but loopback."""

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

import topologies.frameworks.crewai as crew_runtime
from engine.sim.build import build_policy
from engine.sim.faults import FAULT_KINDS, FaultPlan
from engine.sim.server import SimServer
from tests.conftest import start_sim
from tests.engine.faults.matrix import (IMMEDIATE_FAULTS, assert_answered_once, assert_closed_ledger,
                                        assert_store_consistent, job_and_log)
from tests.engine.jobutil import stored_sim_keys
from tests.frameworks.crew_bench import ToolSums
from tests.frameworks.crew_job import (REGISTERED, Call, assert_seeds_and_decoding, by_attempt, reads,
                                      replayed_turns, run)
from tests.optimizers.test_resume import artifacts
from topologies.teams import team_spec

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]
CELL = "task={task},topology=sequential,framework=crewai,team_size=4"
ASKED = {"temperature": 1.3, "top_p": 0.5, "max_tokens": 77, "seed": 5}  # what "the user's crew" sets on its LLM


def assert_pipeline(recorded: list[Call], edges: dict[str, set[str]], stages: list[str]) -> set[tuple[str, str]]:
    """Per attempt: stages run in order; stage k's first call reads exactly the last call of each earlier stage, each
    later call of a stage reads exactly that stage's previous call. Returns the role-level edges between stages."""
    cross: set[tuple[str, str]] = set()
    for attempt, group in by_attempt(recorded).items():
        assert {c.role for c in group} <= set(stages), attempt
        done: list[list[Call]] = []
        for role in stages:
            mine = [c for c in group if c.role == role]
            if not mine:
                assert not [c for c in group if stages.index(c.role) > stages.index(role)], attempt
                break
            assert [c.member for c in mine] == [0] * len(mine) and [c.turn for c in mine] == list(range(len(mine)))
            assert edges.get(mine[0].node_id, set()) == {earlier[-1].node_id for earlier in done}, (attempt, role)
            for previous, call in zip(mine, mine[1:]):
                assert edges[call.node_id] == {previous.node_id}
            cross |= {(earlier[0].role, role) for earlier in done}
            done.append(mine)
    return cross


@pytest.mark.parametrize("task,method,budget", [("gpqa", "identity", 600), ("gpqa", "gepa", 10),
                                                ("bfcl", "identity", 600)])
def test_crewai_job_records_the_pipeline_with_logical_seeds_and_protocol_decoding(tmp_path, monkeypatch, task,
                                                                                   method, budget):
    monkeypatch.setattr(crew_runtime.CrewSequential, "llm_options", ASKED)
    bench = ToolSums()
    if task == "bfcl":  # the real BFCL rows (no tools in a sequential BFCL team: the answer is the calls)
        server = SimServer(build_policy(["bfcl"], None, "simulated-reflection"))
        server.start()
        kw = {"bench": REGISTERED, "model_id": "simulated-policy"}
        phases = ["optimize", "validate"]  # 50 validation rows; the 100 test rows would add nothing here
    else:
        server = start_sim(ToolSums())
        kw = {"bench": bench}
        phases = ["all"]
    try:
        for phase in phases:
            result = run(tmp_path / "job", server.base_url, CELL.format(task=task), method, budget, phase=phase, **kw)
    finally:
        server.stop()
    job = tmp_path / "job"
    budget_used = assert_closed_ledger(job)
    assert_store_consistent(job)
    assert result["status"] == ("completed" if phases == ["all"] else "phase_completed")
    assert json.loads((job / "job.json").read_text())["registry_key"] == "sequential_crewai"
    assert budget_used["charged"] == (10 if method == "gepa" else 0)
    stages = [s.role for s in team_spec(task).stages(4)]
    recorded = assert_seeds_and_decoding(job, "crewai", {k: json.dumps(v) for k, v in ASKED.items()})
    cross = assert_pipeline(recorded, reads(job), stages)
    assert cross == {(a, b) for i, a in enumerate(stages) for b in stages[i + 1:]}
    assert {c.phase for c in recorded} == ({"optimize", "validation", "test"} if method == "gepa"
                                           else {"validation"} if task == "bfcl" else {"validation", "test"})
    if task == "gpqa":  # the answering stage called the calculator on every third row, through the gateway
        assert bench.tool_runs and all(args == {"expression": args["expression"]} for _, args in bench.tool_runs)
        assert {c.role for c in recorded if c.turn > 0} == {"verifier"}


def job_cmd(out: Path, url: str) -> list[str]:
    return [sys.executable, "-m", "tests.frameworks.crew_job", str(out), url, CELL.format(task="gpqa"), "gepa", "10"]


def test_crewai_job_killed_mid_optimization_resumes_to_the_uninterrupted_result(tmp_path):
    data_home = tmp_path / "xdg"  # where CrewAI's default kickoff log would go: it must stay empty of it
    env = {**os.environ, "XDG_DATA_HOME": str(data_home)}
    reference = start_sim(ToolSums(), delay_s=0.002)
    try:
        done = subprocess.run(job_cmd(tmp_path / "ref", reference.base_url), cwd=ROOT, capture_output=True,
                              text=True, timeout=280, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        optimize_requests = sum(1 for e in reference.log if e["kind"] != "reflection")
    finally:
        reference.stop()
    assert "NONLOCAL" not in done.stderr, done.stderr  # CrewAI reached nothing but loopback
    assert list(data_home.rglob("*.db")) == []  # and wrote no task outputs outside the job directory
    assert len(done.stdout.strip().splitlines()) == 1  # stdout: the job's one JSON line, nothing of CrewAI's

    server = start_sim(ToolSums(), delay_s=0.002)
    try:
        out = tmp_path / "killed"
        proc = subprocess.Popen(job_cmd(out, server.base_url), cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(server.log) < 25 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert proc.poll() is None, "the job finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert not (out / "optimization.json").exists(), "killed after the optimize phase"
        recorded_before_kill = stored_sim_keys(out / "card.sqlite")
        assert recorded_before_kill, "killed before any call was recorded"
        n_before = len(server.log)
        again = subprocess.run(job_cmd(out, server.base_url), cwd=ROOT, capture_output=True, text=True, timeout=280)
        assert again.returncode == 0, again.stderr[-3000:]
        log = server.log
    finally:
        server.stop()
    assert "NONLOCAL" not in again.stderr, again.stderr
    assert artifacts(out) == artifacts(tmp_path / "ref")
    assert {e["key"] for e in log[n_before:]} & recorded_before_kill == set(), "a recorded call was sent again"
    twice = [k for k, n in Counter(e["key"] for e in log).items() if n > 1]
    assert len(twice) <= 4  # only requests in flight at the kill (concurrency 4) may repeat
    assert optimize_requests > 25
    assert_seeds_and_decoding(out, "crewai", {})  # replayed turns carry the same requests (no replay_mismatch)
    # rollouts cut by the kill ran again through CrewAI: their recorded turns came back from the store
    assert replayed_turns(out, "crewai") > 0


def test_crewai_job_under_twenty_percent_faults_of_every_kind_completes_with_a_closed_ledger(tmp_path, capsys):
    rates = {kind: 0.2 / len(FAULT_KINDS) for kind in FAULT_KINDS}
    server = start_sim(ToolSums(), faults=FaultPlan(rates=rates, seed=7, slow_s=3.0))
    try:
        result = run(tmp_path / "job", server.base_url, CELL.format(task="gpqa"), "gepa", 10, timeout=2.0)
        injected = server.fault_counts()
    finally:
        server.stop()
    job = tmp_path / "job"
    budget = assert_closed_ledger(job)
    assert_store_consistent(job)
    assert result["status"] == "completed" and 0 < budget["charged"] <= 10
    assert sum(injected.values()) >= 15 and len(injected) >= 6, injected
    assert budget["infrastructure_failures"] > 0 or any(
        c["infrastructure_failures"] for c in result["test"]["failure_counts"].values())
    assert_seeds_and_decoding(job, "crewai", {})
    assert capsys.readouterr().out == ""  # CrewAI printed nothing (stdout is the job's one JSON line)


def test_crewai_empty_answer_is_a_scored_semantic_failure_not_a_retry(tmp_path):
    """CrewAI raises on a reply with empty content; that reply was observed (protocol 5.3): the rollout is usable,
    its answer empty (scored 0), and nothing is sent twice."""
    server = start_sim(ToolSums(), faults=FaultPlan(rates={"empty_content": 0.3}, seed=3))
    try:
        result = run(tmp_path / "job", server.base_url, CELL.format(task="gpqa"), "gepa", 10)
        log = server.log
    finally:
        server.stop()
    job = tmp_path / "job"
    budget = assert_closed_ledger(job)
    assert budget["infrastructure_failures"] == 0
    for counts in result["test"]["failure_counts"].values():
        assert counts["infrastructure_failures"] == 0 and counts["usable"] == counts["n"]
    stopped = stopped_records(job)
    assert stopped and all(r["status"] == "semantic_failure" and r["score"] == 0.0 for r in stopped)
    assert all(r["final_output"]["metadata"]["framework_stopped"]["error"].startswith("ValueError") for r in stopped)
    assert max(Counter(e["key"] for e in log if e["key"]).values()) == 1


def stopped_records(job: Path) -> list[dict]:
    conn = sqlite3.connect(str(job / "card.sqlite"))
    try:
        records = [json.loads(r) for (r,) in conn.execute("SELECT record FROM rollouts")]
    finally:
        conn.close()
    return [r for r in records if "framework_stopped" in ((r.get("final_output") or {}).get("metadata") or {})]


def test_crewai_tool_backend_outage_is_an_uncharged_infrastructure_failure(tmp_path):
    """A tool whose backend is down fails the attempt (retried with the same seed, never charged), even though the
    framework would hand a tool error to the model as text."""
    bench = ToolSums(down=frozenset({"q9"}))  # a validation row whose answer calls the calculator
    server = start_sim(ToolSums())
    try:
        result = run(tmp_path / "job", server.base_url, CELL.format(task="gpqa"), bench=bench)
    finally:
        server.stop()
    counts = result["selection"]["validation_failure_counts"]["baseline"]
    assert counts["infrastructure_failures"] == 1 and counts["usable"] == counts["n"] - 1
    assert result["selection"]["fallback_reason"].startswith("invalid_record:")
    assert sum(1 for row, _ in bench.tool_runs if row == "q9") >= 3  # the attempt and its two same-seed retries
    assert_store_consistent(tmp_path / "job")


def test_each_answer_through_crewai_is_recorded_once_and_never_requested_again(tmp_path):
    """tests/engine/faults/test_answered_once, on the CrewAI runtime."""
    server = start_sim(ToolSums(), faults=IMMEDIATE_FAULTS)
    result, log = job_and_log(server, lambda: run(tmp_path / "job", server.base_url, CELL.format(task="gpqa"), "gepa",
                                                  10, timeout=10.0))
    assert result["status"] == "completed"
    assert_answered_once(log, tmp_path / "job")
