"""A small seeded Tree-structured Parzen Estimator over categorical parameters (MIPRO's search, protocol 8.2).

Stands in for `optuna.samplers.TPESampler(seed=9 + s, multivariate=True)` without adding optuna to the project
(pyproject extras are not ours to change here). It follows optuna's defaults where they matter:
- the first `n_startup_trials` (10) suggestions are independent uniform draws;
- afterwards the observations are split into the best `gamma(n) = min(ceil(0.1 n), 25)` ("good") and the rest;
  for each parameter a smoothed categorical density l(x) over the good and g(x) over the rest is formed (prior
  weight 1 spread uniformly over the choices), `n_ei_candidates` (24) joint candidates are drawn from l
  (multivariate: one draw of every parameter per candidate), and the candidate maximising prod l(x) / g(x) wins.
Every draw comes from the `random.Random` it is given, so the same seed and the same observations give the same
suggestions (no global RNG, no wall clock).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping


def default_gamma(n: int) -> int:
    return min(math.ceil(0.1 * n), 25)


class CategoricalTPE:
    def __init__(self, space: Mapping[str, int], rng: random.Random, *, n_startup_trials: int = 10,
                 n_ei_candidates: int = 24, prior_weight: float = 1.0):
        if any(n < 1 for n in space.values()):
            raise ValueError("every parameter needs at least one choice")
        self.space = dict(sorted(space.items()))
        self.rng = rng
        self.n_startup = n_startup_trials
        self.n_candidates = n_ei_candidates
        self.prior = prior_weight
        self.observations: list[tuple[dict[str, int], float]] = []

    def tell(self, config: Mapping[str, int], score: float) -> None:
        self.observations.append((dict(config), float(score)))

    def _uniform(self) -> dict[str, int]:
        return {name: self.rng.randrange(n) for name, n in self.space.items()}

    def _density(self, group: list[dict[str, int]], name: str) -> list[float]:
        n = self.space[name]
        counts = [self.prior / n] * n
        for config in group:
            counts[config[name]] += 1.0
        total = sum(counts)
        return [c / total for c in counts]

    def ask(self) -> dict[str, int]:
        if len(self.observations) < self.n_startup:
            return self._uniform()
        # best first; ties keep the earlier observation first (stable sort)
        ranked = sorted(self.observations, key=lambda o: -o[1])
        n_good = max(1, default_gamma(len(ranked)))
        good = [c for c, _ in ranked[:n_good]]
        bad = [c for c, _ in ranked[n_good:]]
        l_dens = {name: self._density(good, name) for name in self.space}
        g_dens = {name: self._density(bad, name) for name in self.space}
        best: tuple[float, dict[str, int]] | None = None
        for _ in range(self.n_candidates):
            cand = {name: self.rng.choices(range(n), weights=l_dens[name])[0] for name, n in self.space.items()}
            score = sum(math.log(l_dens[k][v]) - math.log(g_dens[k][v]) for k, v in cand.items())
            if best is None or score > best[0]:
                best = (score, cand)
        assert best is not None
        return best[1]
