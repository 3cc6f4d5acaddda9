"""Kill -9 at a seeded random point of optimization, re-run: the same incumbent, learning curve and selection as
an uninterrupted run, and no task or reflection request recorded before the kill is sent again."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from tests.conftest import start_sim
from tests.engine.jobutil import comparable
from tests.optimizers.killrun import kill_and_rerun
from tests.optimizers.optjob import bench

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]
CONCURRENCY = 4


def job_cmd(out: Path, url: str, method: str) -> list[str]:
    return [sys.executable, "-m", "tests.optimizers.run_opt_job", str(out), url, method, str(CONCURRENCY)]


def artifacts(out: Path) -> dict:
    return {"optimization": json.loads((out / "optimization.json").read_text()),
            "curve": (out / "optimization" / "learning_curve.jsonl").read_text(),
            "optimizer_result": json.loads((out / "optimization" / "optimizer_result.json").read_text()),
            "selection": json.loads((out / "selection.json").read_text()),
            "result": comparable(json.loads((out / "result.json").read_text()))}


# kill windows: request counts that fall inside the optimize phase of each method on this bench
@pytest.mark.parametrize("method,window,draw_seed", [("gepa", (15, 400), 11), ("mipro", (8, 70), 12)])
def test_kill9_during_optimization_then_rerun_equals_uninterrupted(tmp_path, method, window, draw_seed):
    kill_after = random.Random(draw_seed).randint(*window)
    run = kill_and_rerun(tmp_path, lambda out, url: job_cmd(out, url, method),
                         lambda: start_sim(bench(), delay_s=0.002), kill_after, "reflection")
    assert artifacts(run.out) == artifacts(run.reference)
    assert run.resent() == set(), "a request recorded before the kill was sent again"
    assert len(run.answered_twice()) <= CONCURRENCY  # only requests in flight at the kill
    reflections = [e for e in run.log if e["kind"] == "reflection"]
    assert reflections, "the run used the reflection model"
