"""GEPA on an in-memory ledger runner: stop rules, the cap, determinism, round robin, the reflection prompt."""

from __future__ import annotations

import random

import anyio
import pytest

from core.models import PromptBundle, Row
from optimizers.gepa import Gepa
from optimizers.gepa.pareto import Candidate, dominators, find_merge, instance_fronts, merge_subsample, select_parent
from optimizers.gepa.sampler import EpochShuffledSampler
from optimizers.reflective_dataset import last_fenced_block
from tests.optimizers.fakes import FakeReflection, FakeRunner, rows, seed_bundle

TRAIN, VAL = rows("t", 12), rows("v", 10)


def child_wins_val_flat():
    """Train: the first bundle run in an iteration (the parent) scores 0, the next (the child) 1.
    Validation: 1 on even rows whatever the bundle (a full evaluation never improves)."""
    first: dict[object, str] = {}

    def score(row: Row, bundle: PromptBundle, iteration: int | str) -> float:
        if row.id.startswith("v"):
            return 1.0 if int(row.id[1:]) % 2 == 0 else 0.0
        first.setdefault(iteration, bundle.digest)
        return 0.0 if first[iteration] == bundle.digest else 1.0

    return score


def run(method: Gepa, runner: FakeRunner, roles=("solver",)):
    return anyio.run(method.optimize, runner, TRAIN, VAL, seed_bundle(roles), runner.ledger.maximum)


def test_three_full_evaluations_without_improvement_stop_the_search():
    runner = FakeRunner(600, child_wins_val_flat())
    result = run(Gepa(seed=1, reflection=FakeReflection()), runner)
    assert result.stop_reason == "full_eval_plateau"
    snap = runner.budget()
    assert snap.charged == len(VAL) + 3 * (6 + len(VAL)) and snap.violations() == []
    assert result.incumbent == seed_bundle()  # ties keep the earliest candidate
    assert [p.reason for p in result.curve] == ["seed_full_validation", "full_validation", "full_validation",
                                                "full_validation", "stop:full_eval_plateau"]
    assert [p.charged_rollouts for p in result.curve][:4] == [10, 26, 42, 58]


def test_a_validation_cut_short_by_the_cap_is_not_a_candidate():
    budget = len(VAL) + 6 + 3
    runner = FakeRunner(budget, child_wins_val_flat())
    result = run(Gepa(seed=1, reflection=FakeReflection()), runner)
    snap = runner.budget()
    assert result.stop_reason == "rollout_budget_spent"
    assert snap.charged == budget and snap.reserved == 0 and snap.violations() == []
    assert snap.budget_exhausted_requests == len(VAL) - 3
    assert result.incumbent == seed_bundle()
    assert result.artifacts["partial_validations"] == [
        {"iteration": 1, "origin": "mutation", "bundle_sha256": runner.calls[-1][1], "rows_scored": 3}]
    assert len(result.artifacts["candidates"]) == 1


@pytest.mark.parametrize("budget", [1, 10, 11, 15, 16, 17, 30, 100, 257])
def test_the_ledger_never_overshoots(budget):
    rng_scores = random.Random(budget)
    table: dict[tuple[str, str, str], float] = {}

    def noisy(row: Row, bundle: PromptBundle, iteration: int | str) -> float:
        key = (row.id, bundle.digest, str(iteration))
        return table.setdefault(key, float(rng_scores.random() < 0.3 + 0.1 * bundle.roles["solver"].count("Tip")))

    runner = FakeRunner(budget, noisy)
    result = run(Gepa(seed=0, reflection=FakeReflection()), runner)
    snap = runner.budget()
    assert snap.charged <= budget and snap.violations() == []
    if result.stop_reason == "rollout_budget_spent":
        assert snap.charged == budget


def test_same_seed_same_search_other_seed_other_rng():
    def go(seed):
        runner = FakeRunner(300, child_wins_val_flat())
        res = run(Gepa(seed=seed, reflection=FakeReflection()), runner)
        return res, runner.calls

    (a, calls_a), (b, calls_b) = go(1), go(1)
    assert a == b and calls_a == calls_b
    assert a.artifacts["policy"]["rng_seed"] == 1
    (c, calls_c) = go(2)
    assert c.artifacts["policy"]["rng_seed"] == 2
    assert [x[0] for x in calls_c[1:3]] != [x[0] for x in calls_a[1:3]]  # other minibatch order


def test_roles_are_mutated_round_robin_and_prompt_carries_feedback():
    reflection = FakeReflection()
    runner = FakeRunner(600, child_wins_val_flat(), roles=("planner", "solver"))
    result = run(Gepa(seed=1, reflection=reflection), runner, roles=("planner", "solver"))
    roles = [c["role"] for c in result.artifacts["candidates"][1:]]
    assert roles == ["planner", "solver", "planner"]
    prompt, purpose, key = reflection.prompts[0]
    assert purpose == "gepa.mutation" and key == "iteration=1|role=planner|parent=0"
    assert "<current_instruction>\nYou are the planner.\n</current_instruction>" in prompt
    assert "t" in prompt and "wrong (arithmetic error)" in prompt and "Answer for t" in prompt
    # the proposal is the LAST fenced block, not the draft
    first = result.artifacts["candidates"][1]["roles"]["planner"]
    assert first == "You are the planner.\nTip 1." and "ignored draft" not in first


def test_perfect_minibatches_are_skipped_without_reflection():
    reflection = FakeReflection()
    runner = FakeRunner(40, lambda row, bundle, it: 1.0)
    result = run(Gepa(seed=0, reflection=reflection), runner)
    assert reflection.prompts == [] and result.stop_reason == "rollout_budget_spent"
    assert [e.get("skipped") for e in result.artifacts["iterations"]] == ["perfect_minibatch"] * 10
    assert runner.budget().charged == 40


def test_reflection_is_required():
    from core.errors import ContractError

    with pytest.raises(ContractError, match="reflection"):
        run(Gepa(seed=0), FakeRunner(100, child_wins_val_flat()))


def test_plan_states_what_the_budget_buys():
    text = Gepa().plan(600, 150, 50)
    assert "seed on validation 50" in text and "6 per iteration" in text and "at most 91 proposals" in text
    assert "at most 9 can be fully validated" in text
    assert Gepa.smallest_useful_budget == 56


# ---------------------------------------------------------------------- pool mechanics

def cand(index, roles, scores, parents=()):
    return Candidate(index=index, bundle=PromptBundle(roles=roles), parents=tuple(parents), origin="x", iteration=0,
                     val_scores=scores, charged_at_discovery=0)


def test_pareto_front_and_weighted_parent_sampling():
    pool = [cand(0, {"a": "a0"}, {"v0": 0, "v1": 0, "v2": 0}),
            cand(1, {"a": "a1"}, {"v0": 1, "v1": 1, "v2": 0}, [0]),
            cand(2, {"a": "a2"}, {"v0": 0, "v1": 0, "v2": 1}, [0])]
    assert instance_fronts(pool) == {"v0": {1}, "v1": {1}, "v2": {2}}
    assert dominators(instance_fronts(pool), {c.index: c.mean for c in pool}) == [1, 2]
    rng = random.Random(0)
    picks = [select_parent(pool, rng).index for _ in range(300)]
    assert 0 not in picks and 150 < picks.count(1) < 250  # weighted 2:1 by rows won


def test_merge_takes_each_role_from_the_descendant_that_changed_it():
    pool = [cand(0, {"a": "a0", "b": "b0"}, {"v0": 0, "v1": 0}),
            cand(1, {"a": "a1", "b": "b0"}, {"v0": 1, "v1": 0}, [0]),
            cand(2, {"a": "a0", "b": "b1"}, {"v0": 0, "v1": 1}, [0])]
    plan = find_merge(pool, random.Random(0), set(), set())
    assert plan is not None and plan.roles == {"a": "a1", "b": "b1"} and plan.ancestor == 0
    triplets, descriptions = {(1, 2, 0)}, set()
    assert find_merge(pool, random.Random(0), triplets, descriptions) is None  # never the same merge twice
    ids = merge_subsample(pool[1].val_scores, pool[2].val_scores, random.Random(0), 5)
    assert sorted(ids) == ["v0", "v1"]


def test_epoch_sampler_covers_every_row_each_epoch():
    sampler = EpochShuffledSampler([f"t{i}" for i in range(7)], 3, random.Random(0))
    first_epoch = [i for _ in range(3) for i in sampler.next()]
    assert set(first_epoch) == {f"t{i}" for i in range(7)} and len(first_epoch) == 9
    again = EpochShuffledSampler([f"t{i}" for i in range(7)], 3, random.Random(0))
    assert [i for _ in range(3) for i in again.next()] == first_epoch


def test_last_fenced_block():
    assert last_fenced_block("a\n```\nfirst\n```\nb\n```text\nsecond one\n```") == "second one"
    assert last_fenced_block("no fence") is None
    assert last_fenced_block("```\n\n```") is None
