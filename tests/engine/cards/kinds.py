"""Cards of three kinds for the re-derivation forgeries: a GEPA job (budget 60) of a single agent, of a 4-agent
decentralized team, and of a single agent on the LangGraph framework runtime. Each with infrastructure failures
(HTTP 500 on every request) on one train row (q3), one validation row (q14: the selection falls back) and one
test row (q24)."""

from __future__ import annotations

from pathlib import Path

from engine.sim.faults import FaultPlan, ScheduledFault
from tests.conftest import start_sim
from tests.engine.jobutil import run
from tests.fakebench import FakeBench

KINDS = {"single": "task=gpqa,topology=single", "multi": "task=gpqa,topology=decentralized,team_size=4",
         "framework": "task=gpqa,topology=single,framework=langgraph",
         # the other native topologies (each card validates clean; test_rederive.test_every_topology_...)
         "independent": "task=gpqa,topology=independent,team_size=4",
         "sequential": "task=gpqa,topology=sequential,team_size=4",
         "centralized": "task=gpqa,topology=centralized,team_size=4"}
FAULT_ROWS = {"train": "q3", "validation": "q14", "test": "q24"}


def _bench() -> FakeBench:
    bench = FakeBench(n_train=12, n_validation=8, n_test=10)
    bench.name = "gpqa"  # type: ignore[misc]  # the gpqa team spec applies; the rows stay the fake sums
    return bench


def kind_job(out: Path, kind: str, *, faults: bool = True) -> Path:
    plan = FaultPlan(schedule=[ScheduledFault(kind="http_500", row_id=r) for r in FAULT_ROWS.values()] if faults
                     else [])
    server = start_sim(_bench(), faults=plan)
    try:
        run(out, server.base_url, _bench(), method="gepa", budget=60, cell=KINDS[kind])
    finally:
        server.stop()
    return out


def recovered_job(out: Path, kind: str = "single") -> Path:
    """A `kind` job with its faults, then run again on a healthy endpoint: the re-run recovers (job.recovery)."""
    kind_job(out, kind)
    return kind_job(out, kind, faults=False)
