"""Outages and rate limits are waits, not attempts: the job completes valid with the result of a clean run, and
the card shows every wait. Short, test-sized outages (2.5 s) stand in for the 20 s of the issue; the engine code
path is the same (the pool's outage wait is bounded by --max-outage, 15 min by default)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.sim.faults import FaultPlan, ScheduledFault
from tests.conftest import start_sim
from tests.engine.faults.matrix import assert_closed_ledger, assert_store_consistent, run_small, small_bench
from tests.engine.faults.servers import Restartable, outage, when
from tests.engine.jobutil import comparable

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

TOPOLOGY = ("decentralized", 2)
BUDGET = 30


def clean(tmp_path: Path, **kw: Any) -> dict[str, Any]:
    server = start_sim(small_bench())
    try:
        return run_small(tmp_path / "clean", server.base_url, *TOPOLOGY, budget=BUDGET, **kw)
    finally:
        server.stop()


def pool_mutations(job: Path) -> list[tuple[str, dict[str, Any]]]:
    conn = sqlite3.connect(str(job / "card.sqlite"))
    try:
        rows = conn.execute("SELECT mutation_type, new_value FROM mutations WHERE actor='engine:endpoint_pool' "
                            "ORDER BY sequence").fetchall()
    finally:
        conn.close()
    return [(kind, json.loads(value)) for kind, value in rows]


def test_outage_in_the_middle_of_optimization_is_waited_out(tmp_path: Path):
    expected = clean(tmp_path)
    endpoint = Restartable(small_bench())
    job = tmp_path / "job"
    state: dict[str, bool] = {}

    def mid_optimization() -> bool:
        if len(endpoint.server.log) < 60:
            return False
        state["optimizing"] = not (job / "optimization.json").exists()
        return True

    watcher = when(mid_optimization, outage(endpoint, 2.5))
    try:
        got = run_small(job, endpoint.url, *TOPOLOGY, budget=BUDGET)
        watcher.join()
    finally:
        endpoint.stop()
    assert state == {"optimizing": True}
    assert comparable(got) == comparable(expected)  # exact: no attempt was spent on the outage
    assert_closed_ledger(job)
    assert_store_consistent(job)
    kinds = [k for k, _ in pool_mutations(job)]
    for kind in ("endpoint.ejected", "pool.outage_started", "endpoint.readmitted", "pool.outage_ended"):
        assert kind in kinds, kinds
    assert kinds.index("pool.outage_started") < kinds.index("pool.outage_ended")


def test_outage_in_the_middle_of_the_test_phase_is_waited_out(tmp_path: Path):
    expected = clean(tmp_path)
    endpoint = Restartable(small_bench())
    test_ids = set(small_bench().splits().test)
    watcher = when(lambda: any(e["row_id"] in test_ids for e in endpoint.server.log), outage(endpoint, 2.5))
    try:
        got = run_small(tmp_path / "job", endpoint.url, *TOPOLOGY, budget=BUDGET)
        watcher.join()
    finally:
        endpoint.stop()
    assert comparable(got) == comparable(expected)
    assert got["test"]["valid_for_aggregation"] is True
    assert "pool.outage_ended" in [k for k, _ in pool_mutations(tmp_path / "job")]


def test_429_with_retry_after_on_every_third_request_slows_the_job_but_fails_no_row(tmp_path: Path):
    expected = clean(tmp_path)
    plan = FaultPlan(schedule=[ScheduledFault(kind="http_429", every=3)], retry_after_s=0.02)
    server = start_sim(small_bench(), faults=plan)
    try:
        got = run_small(tmp_path / "job", server.base_url, *TOPOLOGY, budget=BUDGET)
        log = server.log
    finally:
        server.stop()
    assert comparable(got) == comparable(expected)
    n_429 = sum(1 for e in log if e["status"] == 429)
    assert n_429 >= len(log) // 3 - 1 and n_429 > 50
    pauses = [v for k, v in pool_mutations(tmp_path / "job") if k == "endpoint.backpressure"]
    assert len(pauses) == n_429  # every wait is in the card
    assert all(p["retry_after_s"] == 0.02 and p["in_flight_limit"] >= 1 for p in pauses)
    assert min(p["in_flight_limit"] for p in pauses) == 1  # the limit came down under the storm


def test_three_of_ten_endpoints_killed_mid_job(tmp_path: Path):
    expected = clean(tmp_path, concurrency=2)
    endpoints = [Restartable(small_bench()) for _ in range(10)]
    dead = endpoints[:3]

    def total() -> int:
        return sum(len(e.server.log) for e in endpoints)

    def kill_three() -> None:
        for e in dead:
            e.kill()

    watcher = when(lambda: total() >= 80, kill_three)
    try:
        got = run_small(tmp_path / "job", [e.url for e in endpoints], *TOPOLOGY, budget=BUDGET, concurrency=2,
                        reflection=endpoints[-1].url)
        watcher.join()
        live_after = [len(e.server.log) for e in endpoints[3:]]
    finally:
        for e in endpoints:
            e.stop()
    assert comparable(got) == comparable(expected)
    mutations = pool_mutations(tmp_path / "job")
    ejected = {v["endpoint"] for k, v in mutations if k == "endpoint.ejected"}
    assert ejected == {e.url for e in dead}
    summary = [v for k, v in mutations if k == "pool.summary" and len(v["endpoints"]) == 10][0]
    by_url = {row["endpoint"]: row for row in summary["endpoints"]}
    for e in dead:
        row = by_url[e.url]
        assert row["healthy"] is False
        assert row["answered"] <= len(e.logs[0])  # nothing was answered after the kill ...
        # ... and it got only the requests that detected it: those in flight (<= its limit of 2), those queued
        # for it meanwhile (<= 2 more) and the consecutive failures that eject it (2)
        assert row["sent"] - row["answered"] <= 2 + 2 + 2
    assert sum(live_after) > 3 * sum(len(e.logs[0]) for e in dead)  # the live ones carried the rest
    assert all(n > 0 for n in live_after)


def snapshot(job: Path) -> dict[str, bytes]:
    return {str(p.relative_to(job)): p.read_bytes() for p in sorted(job.rglob("*"))
            if p.is_file() and p.suffix in (".json", ".jsonl") and "recovered" not in p.parts}


def test_a_job_whose_only_endpoint_stayed_down_finishes_when_re_run(tmp_path: Path):
    expected = clean(tmp_path)
    endpoint = Restartable(small_bench())
    job = tmp_path / "job"
    watcher = when(lambda: len(endpoint.server.log) >= 40, endpoint.kill)
    try:
        first = run_small(job, endpoint.url, *TOPOLOGY, budget=BUDGET, max_outage=1.0)
        watcher.join()
        optimization = json.loads((job / "optimization.json").read_text())
        assert optimization["failure_kind"] == "infrastructure_invalid"
        assert first["test"]["valid_for_aggregation"] is False
        assert_closed_ledger(job)
        endpoint.restart()
        second = run_small(job, endpoint.url, *TOPOLOGY, budget=BUDGET, max_outage=1.0)
        resent = endpoint.server.log
        finished = snapshot(job)
        third = run_small(job, endpoint.url, *TOPOLOGY, budget=BUDGET)  # a finished valid job is never changed
        after_third = len(endpoint.server.log)
    finally:
        endpoint.stop()
    assert comparable(second) == comparable(expected)
    assert second["test"]["valid_for_aggregation"] is True
    assert_closed_ledger(job)
    assert_store_consistent(job)
    # only what had failed was sent again: nothing answered before the outage was requested twice
    answered_before = {e["key"] for e in endpoint.logs[0] if e["status"] == 200 and not e["fault"]}
    assert resent and not answered_before & {e["key"] for e in resent if e["key"]}
    # the failed attempts stay in the card; the earlier artifacts are kept aside, and the recovery is recorded
    conn = sqlite3.connect(str(job / "card.sqlite"))
    failed_calls = conn.execute("SELECT COUNT(*) FROM events WHERE event_type='model_call' AND ok=0").fetchone()[0]
    recovery = conn.execute("SELECT new_value FROM mutations WHERE mutation_type='job.recovery'").fetchall()
    conn.close()
    assert failed_calls > 0
    assert len(recovery) == 1 and "optimization.json" in json.loads(recovery[0][0])["moved"]
    kept = json.loads(next((job / "recovered").glob("g*/optimization.json")).read_text())
    assert kept["failure_kind"] == "infrastructure_invalid"
    assert comparable(third) == comparable(second) and snapshot(job) == finished
    assert after_third == len(resent)  # no request
    # the card holding the outage, the failed attempts and the recovery exports and validates
    for args in (["export", str(job), "--out", str(tmp_path / "card")], ["validate", str(tmp_path / "card")]):
        proc = subprocess.run([sys.executable, "-m", "engine", "card", *args], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parents[3], timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "valid (0 error(s)" in proc.stdout


def test_evaluations_holding_infrastructure_failures_are_finished_by_a_re_run(tmp_path: Path):
    expected = clean(tmp_path)
    endpoint = Restartable(small_bench())
    job = tmp_path / "job"
    test_ids = set(small_bench().splits().test)
    watcher = when(lambda: any(e["row_id"] in test_ids for e in endpoint.server.log), endpoint.kill)
    try:
        first = run_small(job, endpoint.url, *TOPOLOGY, budget=BUDGET, max_outage=1.0)
        watcher.join()
        assert first["test"]["valid_for_aggregation"] is False
        assert sum(c["infrastructure_failures"] for c in first["test"]["failure_counts"].values()) > 0
        assert first["optimization"]["status"] == "completed"
        optimization_before = (job / "optimization.json").read_bytes()
        endpoint.restart()
        second = run_small(job, endpoint.url, *TOPOLOGY, budget=BUDGET, max_outage=1.0)
    finally:
        endpoint.stop()
    assert comparable(second) == comparable(expected)
    assert (job / "optimization.json").read_bytes() == optimization_before  # the valid phase was not redone
    assert list((job / "recovered").glob("g*/evaluations/*.json"))
