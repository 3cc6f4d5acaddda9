"""The methods' RNG seeds are part of protocol v1 (section 5.5 and the reference forks: GEPA's `rng_seed` 0,
MIPROv2's 9, TAVO's 233): pinned here for every method, before and after the method table (issue 36 item 1)."""

from __future__ import annotations

import random

import pytest

from core.seeds import method_rng_seed
from optimizers.gepa import Gepa
from optimizers.mapro.method import Mapro
from optimizers.maspo.method import Maspo
from optimizers.mipro import Mipro

BASES = {"identity": 0, "gepa": 0, "mipro": 9, "mapro": 0, "maspo": 0, "hivemind": 0, "mamut_gepa": 0,
         "maspob": 0, "tavo": 233}


@pytest.mark.parametrize("method", sorted(BASES))
@pytest.mark.parametrize("seed", (0, 1, 2))
def test_every_method_draws_from_its_pinned_rng_seed(method, seed):
    assert method_rng_seed(method, seed) == BASES[method] + seed


@pytest.mark.parametrize("seed", (0, 1, 2))
def test_each_implemented_method_seeds_its_own_random_from_it(seed):
    assert Gepa(seed=seed).rng.random() == random.Random(0 + seed).random()
    assert Mipro(seed=seed).rng.random() == random.Random(9 + seed).random()
    assert Mapro(seed=seed).rng_seed == 0 + seed
    assert Maspo(seed=seed).rng_seed == 0 + seed
