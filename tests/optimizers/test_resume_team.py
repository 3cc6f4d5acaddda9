"""MAPRO and MASPO: kill -9 at a seeded random point of optimization on a 4-agent BFCL team, re-run: the same
incumbent, learning curve and selection as an uninterrupted run, and no task, judge, probe or reflection request
recorded before the kill is sent again (only requests in flight at the kill may repeat)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from engine.sim.build import build_policy
from engine.sim.server import SimServer
from tests.optimizers.killrun import kill_and_rerun
from tests.optimizers.test_resume import artifacts

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

CONCURRENCY = 4


def job_cmd(out: Path, url: str, method: str) -> list[str]:
    return [sys.executable, "-m", "tests.optimizers.run_team_job", str(out), url, method, str(CONCURRENCY)]


def start() -> SimServer:
    server = SimServer(build_policy(["bfcl"]), delay_s=0.001)
    server.start()
    return server


def kinds_sent(log: list[dict]) -> set[str]:
    return {e["kind"] for e in log}


# kill windows (request counts) inside the optimize phase, after the first judge call of each method
@pytest.mark.parametrize("method,window,draw_seed", [("mapro", (700, 1400), 21), ("maspo", (120, 1600), 22)])
def test_kill9_during_team_optimization_then_rerun_equals_uninterrupted(tmp_path, method, window, draw_seed):
    kill_after = random.Random(draw_seed).randint(*window)
    run = kill_and_rerun(tmp_path, lambda out, url: job_cmd(out, url, method), start, kill_after, "judge")
    assert artifacts(run.out) == artifacts(run.reference)
    assert run.resent() == set(), "a request recorded before the kill was sent again"
    # in flight at the kill: task endpoint (rollouts, judge, probe) + reflection
    assert len(run.answered_twice()) <= 2 * CONCURRENCY
    assert {"judge", "reflection"} <= kinds_sent(run.log)
    usage = json.loads((run.out / "optimization.json").read_text())["usage"]
    ref_usage = json.loads((run.reference / "optimization.json").read_text())["usage"]
    assert usage == ref_usage  # per-component usage identical for a resumed and an uninterrupted run
