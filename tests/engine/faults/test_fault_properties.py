"""Property: under ANY fault schedule (random per-kind rates plus scheduled faults on random request indexes),
in every topology, the job completes, its ledger is closed, its card has no node left open, and no request that
was answered is sent again unless its rollout attempt failed (retries re-send only what failed, plus what was in
flight in sibling agents when the attempt failed and its task group cancelled them)."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from engine.sim.faults import FAULT_KINDS, FaultPlan, ScheduledFault
from tests.conftest import start_sim
from tests.engine.faults.matrix import TOPOLOGIES, assert_closed_ledger, assert_store_consistent, run_small, small_bench

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

FAST_KINDS = [k for k in FAULT_KINDS if k != "slow"]  # `slow` costs a read timeout each; the matrix covers it


@st.composite
def fault_plans(draw: st.DrawFn) -> FaultPlan:
    kinds = draw(st.lists(st.sampled_from(FAST_KINDS), min_size=1, max_size=4, unique=True))
    total = draw(st.floats(min_value=0.05, max_value=0.45))
    weights = [draw(st.integers(min_value=1, max_value=5)) for _ in kinds]
    rates = {k: total * w / sum(weights) for k, w in zip(kinds, weights)}
    schedule = [ScheduledFault(kind=draw(st.sampled_from(FAST_KINDS)), nth=draw(st.integers(0, 200)))
                for _ in range(draw(st.integers(0, 4)))]
    if draw(st.booleans()):
        schedule.append(ScheduledFault(kind=draw(st.sampled_from(["http_429", "http_503", "reset"])),
                                       every=draw(st.integers(2, 7))))
    return FaultPlan(rates=rates, schedule=schedule, seed=draw(st.integers(0, 10_000)), slow_s=1.0)


@settings(max_examples=18, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topology=st.sampled_from(TOPOLOGIES), plan=fault_plans())
def test_any_fault_schedule_in_any_topology_completes_with_a_closed_ledger(topology, plan):
    server = start_sim(small_bench(), faults=plan)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            job = Path(tmp) / "job"
            result = run_small(job, server.base_url, *topology)
            assert_closed_ledger(job)
            assert_store_consistent(job)
        log = server.log
    finally:
        server.stop()
    assert result["status"] == "completed"
    for counts in result["test"]["failure_counts"].values():
        assert counts["usable"] + counts["infrastructure_failures"] == counts["n"]
    rows = [e for e in log if e["row_id"] is not None]
    answered = Counter(e["key"] for e in rows if e["status"] == 200 and e["fault"] in (None, "empty_content"))
    faulted_rows = {e["row_id"] for e in rows if e["fault"] not in (None, "empty_content")}
    for key, n in answered.items():
        if n > 1:  # only a sibling cancelled by a failed attempt of the same row is sent again
            assert {e["row_id"] for e in rows if e["key"] == key} <= faulted_rows
    by_key: dict[str, list[dict]] = {}
    for entry in rows:
        by_key.setdefault(entry["key"], []).append(entry)
    for entries in by_key.values():  # a key is sent again only after a fault, or after its rollout had one
        assert all(e["fault"] not in (None, "empty_content") or e["row_id"] in faulted_rows for e in entries[:-1])
