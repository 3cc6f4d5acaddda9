"""Shared pieces of the fault tests: the topology grid, a small multi-agent job, and card/ledger checks."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.sim.faults import FaultPlan
from engine.sim.server import SimServer
from tests.engine.jobutil import answered_sim_keys, comparable, live_sim_keys, run
from tests.fakebench import FakeBench

# every topology, team sizes 2 and 4 for the multi-agent ones
TOPOLOGIES: tuple[tuple[str, int], ...] = (("single", 1),) + tuple(
    (top, n) for top in ("independent", "sequential", "centralized", "decentralized") for n in (2, 4))
# faults the endpoint answers at once (none holds an answer: a late answer the client gave up on is re-sent, rightly)
IMMEDIATE_FAULTS = FaultPlan(rates={"http_500": 0.12, "http_503": 0.04, "reset": 0.04, "malformed_json": 0.04}, seed=5)
ATTEMPT_COUNTERS = ("attempted", "infrastructure_failures", "retries")


def small_bench() -> FakeBench:
    bench = FakeBench(n_train=6, n_validation=4, n_test=6)
    bench.name = "gpqa"  # type: ignore[misc]  # the gpqa team specs apply; the rows stay the fake sums
    return bench


def cell(topology: str, team_size: int) -> str:
    return f"task=gpqa,topology={topology}" + ("" if topology == "single" else f",team_size={team_size}")


def run_small(out: Path, url: str | list[str], topology: str, team_size: int, **kw: Any) -> dict[str, Any]:
    """A GEPA job with a budget of 10 usable rollouts (the ledger is exercised) on a 4/6-row validation/test."""
    kw.setdefault("method", "gepa")
    kw.setdefault("budget", 10)
    kw.setdefault("timeout", 2.0)  # generous: a loaded CI machine must not turn normal answers into timeouts
    return run(out, url, small_bench(), cell=cell(topology, team_size), **kw)


def without_attempt_counters(result: dict[str, Any]) -> dict[str, Any]:
    """result.json minus wall clock and minus the counters that exist to count failed attempts."""
    out = comparable(result)
    for key in ATTEMPT_COUNTERS:
        out["optimization"]["budget"].pop(key, None)
    out["selection"].pop("selection_id")  # a hash over the optimization envelope, which holds those counters
    return out


def assert_closed_ledger(job: Path) -> dict[str, Any]:
    budget = json.loads((job / "optimization.json").read_text())["budget"]
    assert budget["reserved"] == 0
    assert budget["charged"] == budget["successful"] + budget["semantic_failures"] <= budget["maximum"]
    assert budget["attempted"] == budget["charged"] + budget["infrastructure_failures"]
    assert budget["retries"] == budget["infrastructure_failures"]
    attempts = [json.loads(line) for line in (job / "optimization" / "attempts.jsonl").read_text().splitlines()]
    assert sum(1 for a in attempts if a["charged"]) == budget["charged"]
    return budget


def assert_store_consistent(job: Path) -> None:
    """Every node of the card ended (no rollout left `running`), the run node completed."""
    conn = sqlite3.connect(str(job / "card.sqlite"))
    try:
        open_nodes = conn.execute("SELECT node_id, status FROM nodes WHERE status IN ('running', 'pending', "
                                  "'ready')").fetchall()
        run_status = conn.execute("SELECT status FROM nodes WHERE level=0").fetchall()
    finally:
        conn.close()
    assert open_nodes == []
    assert run_status == [("completed",)]


def infra_records(job: Path) -> int:
    """Rollouts of the test phase that ended as infrastructure failures (after their retries)."""
    test = json.loads((job / "test.json").read_text())
    return sum(c["infrastructure_failures"] for c in test["failure_counts"].values())


def job_and_log(server: SimServer,
                run_job: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a job against a started simulated endpoint, then stop the endpoint: the job's result and its request log."""
    try:
        result = run_job()
        return result, server.log
    finally:
        server.stop()


def assert_answered_once(log: list[dict[str, Any]], job: Path) -> None:
    """Every answer the endpoint sent for the job is in its card, once, and none was asked for again."""
    assert sum(1 for e in log if e.get("fault")) >= 5, "too few faults injected: the test would show little"
    answered = answered_sim_keys(log)
    assert answered and max(answered.values()) == 1, [k for k, c in answered.items() if c > 1][:3]
    assert live_sim_keys(job / "card.sqlite") == answered
