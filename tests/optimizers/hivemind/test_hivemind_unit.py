"""HiveMind's pure parts: Shapley credit equals a brute-force computation (the average marginal over ALL n!
orderings) on random games; the Monte-Carlo branch (2^n > 40) draws p = (40 - 2) // (n - 1) permutations from its
seeded RNG, plans their prefixes and credits their mean marginal; the lessons block, the append-only update and the
batch shrink; the RNG seeds of section 5.5."""

from __future__ import annotations

import random
from itertools import permutations

from hypothesis import given, settings
from hypothesis import strategies as st

from optimizers.hivemind import HiveMind, budget, lessons, shapley

NAMES = tuple(f"w{i}" for i in range(8))


def brute_force(players: tuple[str, ...], value) -> dict[str, float]:
    orders = list(permutations(players))
    credit = {p: 0.0 for p in players}
    for order in orders:
        for k, p in enumerate(order):
            credit[p] += value(frozenset(order[:k + 1])) - value(frozenset(order[:k]))
    return {p: c / len(orders) for p, c in credit.items()}


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=0, max_value=5), data=st.data())
def test_exact_shapley_equals_brute_force_on_random_games(n, data):
    players = NAMES[:n]
    plan = shapley.plan_coalitions(players, random.Random(0))
    assert len(plan.coalitions) == 2 ** n and not plan.permutations  # 2^n <= 40: the power set
    values = {c: data.draw(st.floats(min_value=-1, max_value=1, allow_nan=False)) for c in plan.coalitions}
    got = shapley.shapley(plan, values)
    want = brute_force(players, values.__getitem__)
    assert got.keys() == want.keys()
    assert all(abs(got[p] - want[p]) < 1e-9 for p in players)
    if n:  # efficiency: the credits sum to v(full) - v(empty)
        assert abs(sum(got.values()) - (values[frozenset(players)] - values[frozenset()])) < 1e-9


@settings(max_examples=30, deadline=None)
@given(n=st.integers(min_value=6, max_value=8), seed=st.integers(min_value=0, max_value=10 ** 6), data=st.data())
def test_the_monte_carlo_branch_is_seeded_and_draws_its_formula_count(n, seed, data):
    players = NAMES[:n]
    assert not shapley.exact(n) and shapley.permutation_count(n) == (40 - 2) // (n - 1)
    plan = shapley.plan_coalitions(players, random.Random(seed))
    again = shapley.plan_coalitions(players, random.Random(seed))
    assert plan == again  # the same RNG state plans the same permutations
    assert len(plan.permutations) == (40 - 2) // (n - 1)
    assert all(sorted(p) == sorted(players) for p in plan.permutations)
    prefixes = {frozenset(p[:k]) for p in plan.permutations for k in range(n + 1)}
    assert set(plan.coalitions) == prefixes and len(plan.coalitions) == len(prefixes)
    values = {c: data.draw(st.floats(min_value=-1, max_value=1, allow_nan=False)) for c in plan.coalitions}
    got = shapley.shapley(plan, values)
    for p in players:  # the mean marginal over the drawn permutations
        marginals = [values[frozenset(o[:o.index(p) + 1])] - values[frozenset(o[:o.index(p)])]
                     for o in plan.permutations]
        assert abs(got[p] - sum(marginals) / len(marginals)) < 1e-9


def test_the_lowest_credit_player_ties_go_to_role_order():
    assert shapley.lowest({"a": 0.1, "b": -0.2, "c": -0.2}, ("a", "b", "c")) == "b"


def test_lessons_are_appended_under_the_header_latest_six():
    assert lessons.compose("Seed.", []) == "Seed."
    prompt = lessons.compose("Seed.", [f"lesson {i}" for i in range(8)])
    assert prompt.startswith("Seed.\n\n## Lessons learned\n")
    assert "lesson 1" not in prompt and all(f"- lesson {i}" in prompt for i in range(2, 8))


def test_a_new_lesson_is_what_the_block_adds():
    assert lessons.new_lesson("Old one.\nNew one.", ["Old one."]) == "New one."
    assert lessons.new_lesson("Old one.", ["Old one."]) is None and lessons.new_lesson(None, []) is None


def test_batches_shrink_to_fit_and_the_smallest_budget():
    assert budget.cycle_cost(8) == 50 and budget.cycle_cost(16) == 90  # protocol 8.5's charging per cycle
    assert budget.smallest_budget(8) == 10 and budget.smallest_budget(16) == 18  # protocol 8.9
    assert budget.batch_rows(8, 600) == 5 and budget.batch_rows(8, 49) == 4 and budget.batch_rows(8, 10) == 1
    assert budget.batch_rows(8, 9) == 0
    assert HiveMind().smallest_useful_budget == 10


def test_rng_seeds_of_section_5_5():
    m = HiveMind(seed=2)
    assert m.plan_seed == 90001 * 2 and m.row_seed == 100003 * 2
