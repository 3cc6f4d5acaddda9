"""Every fault kind of the simulated endpoint x every topology (team sizes 2 and 4): the job completes, its ledger
is closed and its card consistent at a 20% fault rate; at a rate where the same-seed retries suffice, result.json
equals the fault-free run (apart from the counters whose purpose is to count the failed attempts)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from engine.sim.faults import FAULT_KINDS, FaultPlan
from tests.conftest import start_sim
from tests.engine.faults.matrix import (
    TOPOLOGIES,
    assert_closed_ledger,
    assert_store_consistent,
    run_small,
    small_bench,
    without_attempt_counters,
)

SEMANTIC = "empty_content"  # protocol-v1 5.3: not a transport fault; the answer is malformed and scored 0
_clean: dict[tuple[str, int], dict] = {}


def clean_result(tmp_path_factory: pytest.TempPathFactory, topology: str, team_size: int) -> dict:
    if (topology, team_size) not in _clean:
        server = start_sim(small_bench())
        try:
            _clean[(topology, team_size)] = run_small(tmp_path_factory.mktemp("clean") / "job", server.base_url,
                                                      topology, team_size)
        finally:
            server.stop()
    return _clean[(topology, team_size)]


def plan(kind: str, rate: float) -> FaultPlan:
    return FaultPlan(rates={kind: rate}, seed=11, slow_s=1.5)


def timeout(kind: str) -> float:
    """`slow` holds its answer 1.5 s: past a 0.5 s read timeout (each one costs a timeout, so keep it short)."""
    return 0.5 if kind == "slow" else 2.0


@pytest.mark.slow
@pytest.mark.parametrize("kind", [k for k in FAULT_KINDS if k != SEMANTIC])
def test_fault_kind_in_every_topology(kind: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory):
    heavy = start_sim(small_bench(), faults=plan(kind, 0.2))
    light = start_sim(small_bench(), faults=plan(kind, 0.05))
    try:
        for topology, n in TOPOLOGIES:
            job = tmp_path / f"{topology}{n}-20"
            run_small(job, heavy.base_url, topology, n, timeout=timeout(kind))  # completes: nothing escapes
            assert_closed_ledger(job)
            assert_store_consistent(job)
            job = tmp_path / f"{topology}{n}-5"
            got = run_small(job, light.base_url, topology, n, timeout=timeout(kind))
            budget = assert_closed_ledger(job)
            assert_store_consistent(job)
            assert without_attempt_counters(got) == without_attempt_counters(
                clean_result(tmp_path_factory, topology, n)), (topology, n)
            # whatever was injected cost attempts (or pool waits), never a score
            assert got["test"]["failure_counts"]["baseline"]["infrastructure_failures"] == 0
            assert budget["charged"] == 10
        injected = heavy.fault_counts()[kind] + light.fault_counts()[kind]
    finally:
        heavy.stop()
        light.stop()
    assert injected > 20, f"{kind} was injected only {injected} times"


@pytest.mark.slow
def test_empty_content_is_a_scored_semantic_failure_in_every_topology(tmp_path: Path):
    """A 200 with empty content is an observed call: the rollout is usable (scored 0 if the vote picks it),
    never retried as an infrastructure failure."""
    server = start_sim(small_bench(), faults=plan(SEMANTIC, 0.2))
    try:
        for topology, n in TOPOLOGIES:
            job = tmp_path / f"{topology}{n}"
            got = run_small(job, server.base_url, topology, n)
            budget = assert_closed_ledger(job)
            assert_store_consistent(job)
            assert budget["infrastructure_failures"] == 0
            for counts in got["test"]["failure_counts"].values():
                assert counts["infrastructure_failures"] == 0 and counts["usable"] == counts["n"]
        log = server.log
    finally:
        server.stop()
    assert Counter(e["fault"] for e in log)[SEMANTIC] > 20
    # no request was sent twice: an empty answer is kept, not retried
    assert max(Counter(e["key"] for e in log if e["key"]).values()) == 1


def test_single_empty_answers_score_zero(tmp_path: Path):
    """In `single` every empty answer is the rollout's answer: those rows are semantic failures, scored 0."""
    server = start_sim(small_bench(), faults=plan(SEMANTIC, 0.5))
    try:
        got = run_small(tmp_path / "job", server.base_url, "single", 1, method="identity")
        log = server.log
    finally:
        server.stop()
    empty_rows = {e["row_id"] for e in log if e["fault"] == SEMANTIC}
    test = json.loads((tmp_path / "job" / "test.json").read_text())
    assert empty_rows
    for example_id, score, status in zip(test["example_ids"], test["baseline_scores"], test["baseline_status"]):
        if example_id in empty_rows:
            assert score == 0.0 and status == "semantic_failure"
    assert got["test"]["valid_for_aggregation"] is True
