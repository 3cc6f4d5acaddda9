"""On the wire: every answering request of a job carries output contract v2 (+ the dataset's format nudge and
note), every request of a baseline `run` carries v1 and no nudge (protocol-v1 section 9) - for every dataset and
every topology. Read from the requests the store recorded (what was sent to the endpoint).

The rows are the fake sums (so the simulated endpoint can answer them); the contract, format note, nudge,
answer request and step facts are the real dataset's, from the benchmark registry."""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

import benchmarks.registry as registry
from core.contracts import CONTRACT_MARKER, NOTE_MARKER, NUDGE_MARKER, contract_header
from engine.cli.baseline import check_run_options, run_baseline
from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job
from engine.runner import RetryPolicy
from tests.conftest import start_sim
from tests.fakebench import FakeBench
from topologies.teams import team_spec

DATASETS = ("gpqa", "hotpotqa", "math", "lcb", "apps", "swe", "bfcl", "apibank", "toolhop")
TOPOLOGIES = ("single", "independent", "sequential", "centralized", "decentralized")
REAL_FACTS = ("format_note", "format_nudge", "nudge_roles", "single_step_limit", "single_recursion_limit",
              "answer_marker", "answer_request", "answer_is_native_call", "prompt_contract_only", "report_vocabulary")


class DatasetFacts(FakeBench):
    """Fake sum rows under a real dataset's name, contract and declared facts."""

    def __init__(self, dataset: str) -> None:
        super().__init__(n_train=3, n_validation=2, n_test=2)
        self.name = dataset  # type: ignore[misc]
        self.real = registry.get_benchmark(dataset)
        for fact in REAL_FACTS:
            if hasattr(self.real, fact):
                setattr(self, fact, getattr(self.real, fact))

    def contract(self, version: int = 1) -> str:
        return self.real.contract(version)


def answering_roles(dataset: str, topology: str) -> set[str]:
    spec = team_spec(dataset)
    if topology == "single":
        return {"solver"}
    if topology == "independent":
        return {spec.independent_role()}
    if topology == "decentralized":
        return {spec.debater_role()}
    if topology == "sequential":
        return {spec.stages(4)[-1].role}
    team = spec.centralized(4)
    return {team.manager} | {w.name for w in team.workers if w.answers}


def recorded_requests(db: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT payload FROM events WHERE event_type='model_call'").fetchall()
    finally:
        conn.close()
    out = []
    for (payload,) in rows:
        data = json.loads(payload)
        if data.get("component") != "reflection":
            out.append((data["role"], data["request"]["messages"]))
    return out


def check_requests(requests: list[tuple[str, list[dict[str, Any]]]], bench: DatasetFacts, topology: str,
                   version: int) -> None:
    answering = answering_roles(bench.name, topology)
    writers = tuple(getattr(bench, "nudge_roles", ()))
    nudge = getattr(bench, "format_nudge", "")
    note = getattr(bench, "format_note", "")
    assert requests
    seen_roles = set()
    for role, messages in requests:
        system = messages[0]["content"]
        assert messages[0]["role"] == "system"
        seen_roles.add(role)
        if role in answering:
            assert system.startswith(contract_header(version) + "\n"), (bench.name, topology, role)
            assert bench.real.contract(version).strip() in system
            assert contract_header(3 - version) not in system
            assert (NOTE_MARKER in system) == bool(note) and (not note or note in system)
        else:
            assert CONTRACT_MARKER not in system, (bench.name, topology, role)
        wants_nudge = version == 2 and bool(nudge) and (role in answering or any(w in role for w in writers))
        assert (NUDGE_MARKER in system) == wants_nudge, (bench.name, topology, role, version)
        if wants_nudge:
            assert nudge in system
    assert answering & seen_roles, (bench.name, topology)


def run_one_job(tmp_path: Path, bench: DatasetFacts, topology: str) -> Path:
    server = start_sim(bench)
    try:
        cfg = build_config(cell=f"task={bench.name},topology={topology}", method="identity", seed=0,
                           out=str(tmp_path / "job"), budget=600, task_endpoints=[server.base_url],
                           model_id="test-model", data_dir=None, concurrency=8, quiet=True, request_timeout=5.0)
        anyio.run(run_job, JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)}), bench)
    finally:
        server.stop()
    return tmp_path / "job" / "card.sqlite"


def run_one_baseline(tmp_path: Path, bench: DatasetFacts, topology: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(registry, "get_benchmark", lambda name: bench)
    server = start_sim(bench)
    out = tmp_path / "run" / "pred.jsonl"
    args = argparse.Namespace(cell=f"task={bench.name},topology={topology}", seed=0, split="test", only=None,
                              limit=None, data_dir=None, bundle=None, out=str(out), task_endpoints=[server.base_url],
                              model_id="test-model", concurrency=8, request_timeout=5.0, startup_timeout=5.0,
                              unsafe_sandbox=False, api_key_env=None, max_outage=900.0)
    try:
        anyio.run(run_baseline, args, check_run_options(args))
    finally:
        server.stop()
    return out.parent / "pred.run" / "card.sqlite"


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("dataset", DATASETS)
def test_job_requests_carry_contract_v2_and_nudges(tmp_path, dataset, topology):
    bench = DatasetFacts(dataset)
    check_requests(recorded_requests(run_one_job(tmp_path, bench, topology)), bench, topology, version=2)


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("dataset", DATASETS)
def test_baseline_run_requests_carry_contract_v1_without_nudges(tmp_path, dataset, topology, monkeypatch):
    bench = DatasetFacts(dataset)
    check_requests(recorded_requests(run_one_baseline(tmp_path, bench, topology, monkeypatch)), bench, topology,
                   version=1)


def test_toolhop_single_asks_once_more_for_the_answer_tag(tmp_path):
    """Section 10: if the final message has no <answer> tag, one extra short call asks for it (jobs and runs)."""
    bench = DatasetFacts("toolhop")
    requests = recorded_requests(run_one_job(tmp_path, bench, "single"))
    asks = [m for _, m in requests if m[-1]["role"] == "user" and m[-1]["content"] == bench.answer_request]
    firsts = [m for _, m in requests if len(m) == 2]
    assert firsts and len(asks) == len(firsts)  # the sim never writes <answer>: one extra request per rollout
