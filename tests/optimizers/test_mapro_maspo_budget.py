"""Budget plans and smallest useful budgets of MAPRO and MASPO (protocol 8.9) through the CLI: the plan is printed
before any rollout, a budget below the smallest is refused with one line and exit 2 (nothing written) unless
--allow-small-budget."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from optimizers.mapro import Mapro
from optimizers.maspo import Maspo

ROOT = Path(__file__).resolve().parents[2]
CELL = "task=bfcl,topology=sequential,team_size=4"


def job(out: Path, method: str, budget: int, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", "job", "--cell", CELL, "--method", method, "--seed", "0",
                           "--budget", str(budget), "--out", str(out), *extra], cwd=ROOT, capture_output=True,
                          text=True, timeout=280)


@pytest.mark.slow
@pytest.mark.parametrize("method,below,least", [("mapro", 299, 300), ("maspo", 19, 20)])
def test_budget_below_the_smallest_is_refused_with_one_line(tmp_path, method, below, least):
    out = tmp_path / "job"
    done = job(out, method, below)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"smallest useful budget ({least})" in lines[0] and "--allow-small-budget" in lines[0]
    assert not out.exists()


@pytest.mark.slow
def test_smallest_maspo_budget_runs_one_candidate_and_prints_the_plan_first(tmp_path):
    out = tmp_path / "job"
    done = job(out, "maspo", 20)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    plan = next(i for i, line in enumerate(lines) if line.startswith("plan: maspo:"))
    progress = [i for i, line in enumerate(lines) if line.startswith("progress:")]
    assert progress and plan < progress[0]
    opt = json.loads((out / "optimization.json").read_text())
    assert opt["budget"]["charged"] == 20 and opt["stop_reason"] == "budget"
    events = json.loads((out / "optimization" / "optimizer_result.json").read_text())["artifacts"]["events"]
    assert len([o for o in events[0]["offspring"] if "reward" in o]) == 1


@pytest.mark.slow
def test_mapro_below_its_smallest_budget_runs_when_allowed_and_never_cuts_a_train_pass(tmp_path):
    out = tmp_path / "job"
    done = job(out, "mapro", 100, "--allow-small-budget", "--quiet")
    assert done.returncode == 0, done.stderr
    opt = json.loads((out / "optimization.json").read_text())
    assert opt["budget"]["charged"] == 0 and opt["stop_reason"] == "budget"  # section 6: MAPRO stops with `budget`
    assert json.loads((out / "selection.json").read_text())["fallback_reason"] is not None


def test_plans_state_what_the_budget_buys():
    text = Mapro().plan(600, 150, 50)
    assert "at most 3 of <= 8 rounds" in text and "150" in text
    assert "at most 8 of <= 8 rounds" in Mapro().plan(600, 48, 50)  # GPQA: 48 train rows
    text = Maspo().plan(600, 150, 50)
    assert "30 rollouts per beam member" in text and "<= 60" in text and "depth <= 9" in text
    assert Mapro().smallest_budget(146, 50) == 292 and Maspo().smallest_budget(150, 50) == 20
