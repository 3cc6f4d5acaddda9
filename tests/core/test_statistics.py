"""core.statistics against independent implementations (scipy, statsmodels, a plain re-implementation) and by hand."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests

from core.statistics import (
    discordant_pairs,
    exact_mcnemar_p,
    holm_adjust,
    mean,
    paired_bootstrap_ci,
    paired_bootstrap_ci_reference,
    percentile_indices,
    sample_std,
)


def independent_bootstrap(strata, replicates, seed=0):
    """Protocol 5.8 written out again, independently of core.statistics."""
    rng = random.Random(seed)
    seeds = list(range(len(strata)))
    estimates = []
    for _ in range(replicates):
        means = []
        for _slot in seeds:
            chosen = strata[rng.choice(seeds)]
            total = 0.0
            for _ in chosen:
                baseline, deployed = rng.choice(chosen)
                total += (deployed - baseline) + 0.0
            means.append(total / len(chosen))
        summed = 0.0
        for value in means:
            summed += value
        estimates.append(100.0 * (summed / len(means)))
    estimates.sort()
    return estimates[math.floor(0.025 * replicates)], estimates[math.ceil(0.975 * replicates) - 1]


def binary_strata(rng, n, strata=3):
    return [[(rng.randint(0, 1), rng.randint(0, 1)) for _ in range(n)] for _ in range(strata)]


# ------------------------------------------------------------------------------------------------- bootstrap


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100, 129])
def test_bootstrap_fast_path_equals_reference_loop_bit_for_bit(n):
    strata = binary_strata(random.Random(n), n)
    reference = paired_bootstrap_ci_reference(strata, replicates=1000)
    assert paired_bootstrap_ci(strata, replicates=1000) == reference
    assert independent_bootstrap(strata, 1000) == reference


@pytest.mark.slow
def test_bootstrap_default_10000_replicates_matches_reference_and_independent_loop():
    strata = binary_strata(random.Random(42), 100)
    fast = paired_bootstrap_ci(strata)
    assert fast == paired_bootstrap_ci_reference(strata) == independent_bootstrap(strata, 10_000)
    assert fast[0] <= fast[1]


def test_bootstrap_fractional_scores_and_unequal_strata_are_bit_for_bit():
    rng = random.Random(7)
    fractional = [[(rng.random(), rng.random()) for _ in range(37)] for _ in range(3)]
    assert paired_bootstrap_ci(fractional, 500, seed=3) == paired_bootstrap_ci_reference(fractional, 500, seed=3)
    unequal = [[(rng.randint(0, 1), rng.randint(0, 1)) for _ in range(n)] for n in (5, 60, 17)]
    assert paired_bootstrap_ci(unequal, 400) == paired_bootstrap_ci_reference(unequal, 400)
    assert paired_bootstrap_ci(unequal, 400) == independent_bootstrap(unequal, 400)


@settings(max_examples=25, deadline=None)
@given(
    strata=st.lists(
        st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=1, max_size=12), min_size=1, max_size=4
    ),
    seed=st.integers(0, 2**32),
)
def test_bootstrap_property_fast_equals_reference(strata, seed):
    assert paired_bootstrap_ci(strata, 100, seed) == paired_bootstrap_ci_reference(strata, 100, seed)


def test_bootstrap_constant_difference_gives_a_point_interval():
    strata = [[(0, 1)] * 10, [(0, 1)] * 10, [(0, 1)] * 10]
    assert paired_bootstrap_ci(strata, 200) == (100.0, 100.0)
    assert paired_bootstrap_ci([[(1, 1)] * 5] * 3, 100) == (0.0, 0.0)


def test_bootstrap_rejects_too_few_replicates_and_empty_strata():
    strata = binary_strata(random.Random(0), 5)
    with pytest.raises(ValueError, match="100"):
        paired_bootstrap_ci(strata, 99)
    with pytest.raises(ValueError, match="100"):
        paired_bootstrap_ci_reference(strata, 10)
    with pytest.raises(ValueError, match="empty"):
        paired_bootstrap_ci([[(0, 1)], []], 100)


def test_percentile_indices_follow_the_protocol_formula():
    for replicates in (100, 101, 999, 1000, 4567, 10_000, 10_001):
        assert percentile_indices(replicates) == (
            math.floor(0.025 * replicates), math.ceil(0.975 * replicates) - 1)
    assert percentile_indices(10_000) == (250, 9749)


# ------------------------------------------------------------------------------------------------- McNemar


def test_mcnemar_hand_computed_cases():
    assert exact_mcnemar_p(0, 3) == pytest.approx(0.25)
    assert exact_mcnemar_p(3, 0) == pytest.approx(0.25)
    assert exact_mcnemar_p(0, 0) == 1.0
    assert exact_mcnemar_p(1, 1) == 1.0
    assert exact_mcnemar_p(0, 1) == 1.0
    assert exact_mcnemar_p(1, 5) == pytest.approx(2 * (1 + 6) / 64)
    assert exact_mcnemar_p(0, 10) == pytest.approx(2 / 1024)
    with pytest.raises(ValueError):
        exact_mcnemar_p(-1, 2)


@settings(max_examples=200, deadline=None)
@given(wins=st.integers(0, 300), losses=st.integers(0, 300))
def test_mcnemar_matches_scipy_binomtest(wins, losses):
    expected = 1.0 if wins + losses == 0 else binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue
    assert exact_mcnemar_p(wins, losses) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_discordant_pairs_count_wins_and_losses():
    assert discordant_pairs([0, 1, 1, 0, 1], [1, 1, 0, 0, 1]) == (1, 1)
    assert discordant_pairs([0, 0, 0], [1, 1, 0]) == (2, 0)
    with pytest.raises(ValueError):
        discordant_pairs([0, 1], [1])


# ------------------------------------------------------------------------------------------------- Holm


def test_holm_hand_computed_cases():
    adjusted = holm_adjust({"a": 0.01, "b": 0.04, "c": 0.03})
    assert list(adjusted) == ["a", "b", "c"]  # input order
    assert adjusted["a"] == pytest.approx(0.03)
    assert adjusted["c"] == pytest.approx(0.06)
    assert adjusted["b"] == pytest.approx(0.06)  # running max: min(1, 1 * 0.04) = 0.04 < 0.06
    assert holm_adjust({"x": 0.6, "y": 0.7}) == {"x": 1.0, "y": 1.0}
    assert holm_adjust({}) == {}
    assert holm_adjust({"only": 0.2}) == {"only": 0.2}
    # ties are ordered by label; values are equal either way
    assert holm_adjust({"b": 0.01, "a": 0.01}) == pytest.approx({"a": 0.02, "b": 0.02})
    with pytest.raises(ValueError):
        holm_adjust({"bad": 1.5})


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=30))
def test_holm_matches_statsmodels(pvalues):
    labelled = {f"c{i:02d}": p for i, p in enumerate(pvalues)}
    _, expected, _, _ = multipletests(pvalues, method="holm")
    assert list(holm_adjust(labelled).values()) == pytest.approx(list(expected), rel=1e-12, abs=1e-15)


# ------------------------------------------------------------------------------------------------- means


def test_mean_and_sample_std():
    assert mean([1.0, 2.0, 4.0]) == pytest.approx(7 / 3)
    assert sample_std([2.0, 4.0, 6.0]) == pytest.approx(2.0)  # n - 1 denominator
    assert sample_std([5.0, 5.0, 5.0]) == 0.0
    values = [0.1, 0.7, 0.25]
    assert mean(values) == statistics.mean(values)
    assert sample_std(values) == statistics.stdev(values)
    with pytest.raises(ValueError):
        mean([])
    with pytest.raises(ValueError):
        sample_std([1.0])
