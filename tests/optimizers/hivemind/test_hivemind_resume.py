"""HiveMind: kill -9 at a seeded random point of optimization on a 4-agent centralized BFCL team (the pattern of
tests/optimizers/test_resume_team.py), re-run: the same incumbent, learning curve and selection as an
uninterrupted run, the same reflection usage, and no task or reflection request recorded before the kill sent
again (only requests in flight at the kill may repeat)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from tests.optimizers.killrun import kill_and_rerun
from tests.optimizers.test_resume import artifacts
from tests.optimizers.test_resume_team import CONCURRENCY, start

pytestmark = pytest.mark.slow

CELL = "task=bfcl,topology=centralized,team_size=4"


def job_cmd(out: Path, url: str) -> list[str]:
    return [sys.executable, "-m", "tests.optimizers.run_team_job", str(out), url, "hivemind", str(CONCURRENCY), CELL]


def test_kill9_during_hivemind_optimization_then_rerun_equals_uninterrupted(tmp_path):
    kill_after = random.Random(31).randint(300, 1200)
    run = kill_and_rerun(tmp_path, job_cmd, start, kill_after, "reflection")
    assert artifacts(run.out) == artifacts(run.reference)
    assert run.resent() == set(), "a request recorded before the kill was sent again"
    assert len(run.answered_twice()) <= 2 * CONCURRENCY
    usage = json.loads((run.out / "optimization.json").read_text())["usage"]
    ref_usage = json.loads((run.reference / "optimization.json").read_text())["usage"]
    assert usage == ref_usage
