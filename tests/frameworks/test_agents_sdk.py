"""Decentralized on the OpenAI Agents SDK (topologies/frameworks/agents_sdk.py) through the recording gateway, on the simulated
endpoint: jobs complete with a closed ledger; the card shows the debate's who-reads-whom (round 0 reads nobody, each
later round's first call of a peer reads exactly the other peers' last calls of the previous round, a peer's tool loop
reads its own previous call); every call carries its logical seed and the protocol's decoding whatever the SDK asked;
the vote is over the whole whitespace-normalized output; kill -9 and re-run gives the uninterrupted result; faults at
20% (every kind) leave a completed job with a closed ledger; the SDK contacts nothing but loopback."""

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
from agents import ModelSettings

import topologies.frameworks.agents_sdk as sdk_runtime
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

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]
CELL = "task={task},topology=decentralized,framework=openai_agents,team_size=4"
ASKED = {"temperature": 1.3, "top_p": 0.5, "max_tokens": 77}  # what "the user's agents" set as model settings
PEERS, ROUNDS = 4, 2


def rounds_of(mine: list[Call], edges: dict[str, set[str]]) -> list[list[Call]]:
    """A peer's calls split into its rounds: a call that does not read the peer's own previous call starts one."""
    rounds: list[list[Call]] = []
    for call in mine:
        if rounds and edges.get(call.node_id, set()) == {rounds[-1][-1].node_id}:
            rounds[-1].append(call)
        else:
            rounds.append([call])
    return rounds


def assert_debate(recorded: list[Call], edges: dict[str, set[str]]) -> set[tuple[int, int]]:
    """Per attempt: round 0 reads nothing; round r's first call of peer m reads exactly the last call of every other
    peer's round r-1; later calls of a round read the peer's own previous call. Returns the (reader, read) peers."""
    cross: set[tuple[int, int]] = set()
    for attempt, group in by_attempt(recorded).items():
        assert {c.role for c in group} == {"debater"} and {c.member for c in group} <= set(range(PEERS))
        peers = {m: rounds_of([c for c in group if c.member == m], edges) for m in range(PEERS)}
        for member, rounds in peers.items():
            assert len(rounds) <= ROUNDS, attempt
            if rounds:
                assert edges.get(rounds[0][0].node_id, set()) == set(), attempt
            for index in range(1, len(rounds)):
                others = {peers[m][index - 1][-1].node_id for m in range(PEERS) if m != member}
                assert edges[rounds[index][0].node_id] == others, (attempt, member, index)
                cross |= {(member, m) for m in range(PEERS) if m != member}
    return cross


def vote_records(job: Path) -> list[dict]:
    conn = sqlite3.connect(str(job / "card.sqlite"))
    try:
        records = [json.loads(r) for (r,) in conn.execute("SELECT record FROM rollouts")]
    finally:
        conn.close()
    return [r for r in records if r.get("final_output")]


@pytest.mark.parametrize("task,method,budget", [("gpqa", "identity", 600), ("gpqa", "gepa", 10),
                                                ("bfcl", "identity", 600)])
def test_sdk_job_records_the_debate_with_logical_seeds_and_protocol_decoding(tmp_path, monkeypatch, task, method,
                                                                             budget):
    monkeypatch.setattr(sdk_runtime.SdkDecentralized, "model_settings", ModelSettings(**ASKED))
    bench = ToolSums()
    if task == "bfcl":  # the real BFCL rows (peers answer in text: the calls are not executed)
        server = SimServer(build_policy(["bfcl"], None, "simulated-reflection"))
        server.start()
        kw = {"bench": REGISTERED, "model_id": "simulated-policy"}
        phases = ["optimize", "validate"]
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
    assert json.loads((job / "job.json").read_text())["registry_key"] == "decentralized_openai_agents"
    assert budget_used["charged"] == (10 if method == "gepa" else 0)
    recorded = assert_seeds_and_decoding(job, "openai_agents", {k: json.dumps(v) for k, v in ASKED.items()})
    assert assert_debate(recorded, reads(job)) == {(a, b) for a in range(PEERS) for b in range(PEERS) if a != b}
    assert {c.phase for c in recorded} == ({"optimize", "validation", "test"} if method == "gepa"
                                           else {"validation"} if task == "bfcl" else {"validation", "test"})
    for record in vote_records(job):  # the SDK runners' vote: the whole output, whitespace-normalized
        output = record["final_output"]
        vote = output["metadata"]["vote"]
        assert vote["key"] == "whole_output_whitespace_normalized" and vote["n_members"] == PEERS
        assert vote["winner_key"] == (" ".join((output["text"] or "").split()) or None)
        assert output["selected_member"] == vote["selected_member"]
    if task == "gpqa":  # every peer of a tool row called the calculator in each round, through the gateway
        assert bench.tool_runs and {c.turn for c in recorded} == {0, 1, 2, 3}


def job_cmd(out: Path, url: str) -> list[str]:
    return [sys.executable, "-m", "tests.frameworks.crew_job", str(out), url, CELL.format(task="gpqa"), "gepa", "10"]


def test_sdk_job_killed_mid_optimization_resumes_to_the_uninterrupted_result(tmp_path):
    reference = start_sim(ToolSums(), delay_s=0.002)
    try:
        done = subprocess.run(job_cmd(tmp_path / "ref", reference.base_url), cwd=ROOT, capture_output=True,
                              text=True, timeout=280)
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        reference.stop()
    assert "NONLOCAL" not in done.stderr, done.stderr  # the SDK reached nothing but loopback

    server = start_sim(ToolSums(), delay_s=0.002)
    try:
        out = tmp_path / "killed"
        proc = subprocess.Popen(job_cmd(out, server.base_url), cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(server.log) < 70 and proc.poll() is None and time.monotonic() < deadline:
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
    assert len(twice) <= 4 * PEERS  # only requests in flight at the kill (4 rollouts x 4 peers) may repeat
    assert_seeds_and_decoding(out, "openai_agents", {})  # replayed turns carry the same requests
    # rollouts cut by the kill ran again through the SDK: their recorded turns came back from the store
    assert replayed_turns(out, "openai_agents") > 0


def test_sdk_job_under_twenty_percent_faults_of_every_kind_completes_with_a_closed_ledger(tmp_path, capsys):
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
    assert sum(injected.values()) >= 30 and len(injected) >= 8, injected
    assert budget["infrastructure_failures"] > 0
    assert_seeds_and_decoding(job, "openai_agents", {})
    assert capsys.readouterr().out == ""


def test_sdk_empty_answer_is_an_abstaining_vote_not_a_retry(tmp_path):
    server = start_sim(ToolSums(), faults=FaultPlan(rates={"empty_content": 0.3}, seed=3))
    try:
        result = run(tmp_path / "job", server.base_url, CELL.format(task="gpqa"), "gepa", 10)
        log = server.log
    finally:
        server.stop()
    budget = assert_closed_ledger(tmp_path / "job")
    assert budget["infrastructure_failures"] == 0
    for counts in result["test"]["failure_counts"].values():
        assert counts["infrastructure_failures"] == 0 and counts["usable"] == counts["n"]
    assert any(r["final_output"]["metadata"]["vote"]["abstentions"] for r in vote_records(tmp_path / "job"))
    assert max(Counter(e["key"] for e in log if e["key"]).values()) == 1


def test_sdk_tool_backend_outage_is_an_uncharged_infrastructure_failure(tmp_path):
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


def test_each_answer_through_the_sdk_is_recorded_once_and_never_requested_again(tmp_path):
    """A failed peer must not take the round's in-flight calls down with it (tests/engine/faults/test_answered_once)."""
    server = start_sim(ToolSums(), faults=IMMEDIATE_FAULTS)
    result, log = job_and_log(server, lambda: run(tmp_path / "job", server.base_url, CELL.format(task="gpqa"), "gepa",
                                                  10, timeout=10.0))
    assert result["status"] == "completed"
    assert_answered_once(log, tmp_path / "job")
