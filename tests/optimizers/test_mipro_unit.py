"""MIPRO on an in-memory ledger runner, its TPE sampler, and its demo rendering."""

from __future__ import annotations

import json
import random

import anyio
import pytest

from core.models import PromptBundle, Row
from optimizers.mipro import Mipro
from optimizers.mipro.prompts import DEMO_HEADING, render_role_prompt
from optimizers.mipro.tpe import CategoricalTPE
from tests.optimizers.fakes import FakeReflection, FakeRunner, rows, seed_bundle

TRAIN, VAL = rows("t", 12), rows("v", 10)


def tip_helps(row: Row, bundle: PromptBundle, iteration: int | str) -> float:
    """Every other row passes; a proposed instruction (it carries 'Tip') makes every row pass."""
    if "Tip" in bundle.roles["solver"]:
        return 1.0
    return 1.0 if int(row.id[1:]) % 2 == 0 else 0.0


def run(method: Mipro, runner: FakeRunner):
    return anyio.run(method.optimize, runner, TRAIN, VAL, seed_bundle(), runner.ledger.maximum)


def test_bootstrap_proposals_and_full_validation_trials():
    reflection = FakeReflection()
    runner = FakeRunner(600, tip_helps)
    result = run(Mipro(seed=1, reflection=reflection), runner)
    assert result.stop_reason == "num_trials_complete"
    art = result.artifacts
    assert art["bootstrap"]["passed"] >= 5 and art["bootstrap"]["attempted"] == 10  # two batches of 5
    assert [p[1] for p in reflection.prompts] == ["mipro.instruction"] * 3
    assert all("<current_instruction>\nYou are the solver.\n</current_instruction>" in p[0]
               and "training tasks" in p[0] for p in reflection.prompts)
    assert len(art["instructions"]["solver"]) == 4
    trials = art["trials"]
    assert [t["trial"] for t in trials] == [0, 1, 2, 3] and trials[0]["config"] == {"solver.demos": 0,
                                                                                   "solver.instruction": 0}
    fresh = [t for t in trials if not t["cached"]]
    assert runner.budget().charged == 10 + len(VAL) * len(fresh)
    for ids, _, _ in runner.calls[2:]:
        assert ids == [r.id for r in VAL]  # every trial is scored on the FULL validation split
    best = max(t["score"] for t in trials)
    assert result.curve[-2].native_observed_score == best
    if best > trials[0]["score"]:
        assert "Tip" in result.incumbent.roles["solver"]
    assert runner.budget().violations() == []


def test_seed_fixes_the_search():
    a = run(Mipro(seed=2, reflection=FakeReflection()), FakeRunner(600, tip_helps))
    b = run(Mipro(seed=2, reflection=FakeReflection()), FakeRunner(600, tip_helps))
    assert a == b and a.artifacts["policy"]["rng_seed"] == 11


@pytest.mark.parametrize("budget", [3, 10, 12, 25, 35])
def test_budget_cut_returns_the_incumbent_without_overshoot(budget):
    runner = FakeRunner(budget, tip_helps)
    result = run(Mipro(seed=0, reflection=FakeReflection()), runner)
    snap = runner.budget()
    assert result.stop_reason == "rollout_budget_spent"
    assert snap.charged == budget and snap.violations() == []
    if budget < 20:
        assert result.incumbent == seed_bundle()


def test_plan_and_smallest_budget():
    text = Mipro().plan(600, 150, 50)
    assert "bootstrap on train until >= 5 pass" in text and "50 per trial x 3 trials" in text
    assert Mipro.smallest_useful_budget == 105


def test_tpe_is_seeded_and_exploits_after_startup():
    def sampler(seed):
        return CategoricalTPE({"x": 5, "y": 3}, random.Random(seed), n_startup_trials=10)

    s1, s2 = sampler(9), sampler(9)
    assert [s1.ask() for _ in range(5)] == [s2.ask() for _ in range(5)]
    s = sampler(9)
    for i in range(12):
        config = {"x": i % 5, "y": i % 3}
        s.tell(config, 1.0 if config["x"] == 3 else 0.0)
    picks = [s.ask()["x"] for _ in range(20)]
    assert picks.count(3) >= 15


def test_demos_are_rendered_under_the_mipro_heading_and_compacted():
    demo = {"inputs": "x" * 5000, "output": "Answer: 4", "extra": list(range(20))}
    text = render_role_prompt("Solve it.", [demo])
    assert text.startswith("Solve it.\n\n" + DEMO_HEADING + "\n```json\n")
    body = json.loads(text.split("```json\n")[1].split("\n```")[0])
    assert len(body["inputs"]) <= 1400 and body["extra"] == list(range(6))
    assert render_role_prompt("Solve it.", []) == "Solve it."
