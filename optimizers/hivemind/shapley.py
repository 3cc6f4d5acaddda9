"""HiveMind's Shapley credit (protocol 8.5), pure.

Players are the prompts a coalition can drop (centralized: the workers; the manager is always present and the
empty coalition is the manager alone). A cycle plans its coalitions first (`plan_coalitions`), evaluates each,
then credits every player (`shapley`):

* exact: when 2^n <= MAX_COALITIONS (40), every subset is planned and the credit is the Shapley value
      phi_i = sum over S not containing i of |S|! (n - |S| - 1)! / n! * (v(S + i) - v(S));
* Monte-Carlo: otherwise p = (MAX_COALITIONS - 2) // (n - 1) permutations are drawn from the method's plan RNG
  (Random(90001 * s + hm_seed)); the planned coalitions are their prefixes (the empty and the full coalition
  included), and phi_i is the mean over the permutations of i's marginal value at its position.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from math import factorial

MAX_COALITIONS = 40

Coalition = frozenset[str]


def exact(n: int) -> bool:
    return 2 ** n <= MAX_COALITIONS


def permutation_count(n: int) -> int:
    """The Monte-Carlo branch's p = (40 - 2) // (n - 1) (n >= 2)."""
    return (MAX_COALITIONS - 2) // max(1, n - 1)


@dataclass(frozen=True)
class Plan:
    """A cycle's planned coalitions, in evaluation order, and the permutations of the Monte-Carlo branch (empty
    when exact)."""

    players: tuple[str, ...]
    coalitions: tuple[Coalition, ...]
    permutations: tuple[tuple[str, ...], ...] = ()


def plan_coalitions(team: Sequence[str], rng: random.Random) -> Plan:
    players = tuple(team)
    n = len(players)
    if exact(n):
        subsets = [frozenset(c) for size in range(n + 1) for c in combinations(players, size)]
        return Plan(players, tuple(subsets))
    perms = []
    for _ in range(permutation_count(n)):
        drawn = list(players)
        rng.shuffle(drawn)
        perms.append(tuple(drawn))
    found: dict[Coalition, None] = {frozenset(): None}
    for order in perms:
        for k in range(1, n + 1):
            found.setdefault(frozenset(order[:k]), None)
    return Plan(players, tuple(found), tuple(perms))


def shapley(plan: Plan, value: Mapping[Coalition, float]) -> dict[str, float]:
    """Every player's credit from the planned coalitions' values (exact, or the permutations' mean marginal)."""
    players, n = plan.players, len(plan.players)
    if not plan.permutations:
        credit = {}
        for i in players:
            others = [p for p in players if p != i]
            total = 0.0
            for size in range(n):
                weight = factorial(size) * factorial(n - size - 1) / factorial(n)
                for c in combinations(others, size):
                    s = frozenset(c)
                    total += weight * (value[s | {i}] - value[s])
            credit[i] = total
        return credit
    sums = {p: 0.0 for p in players}
    for order in plan.permutations:
        for k, p in enumerate(order):
            sums[p] += value[frozenset(order[:k + 1])] - value[frozenset(order[:k])]
    return {p: sums[p] / len(plan.permutations) for p in players}


def lowest(credit: Mapping[str, float], players: Sequence[str]) -> str:
    """The lowest-credit player (ties: the first in role order)."""
    return min(players, key=lambda p: (credit[p], players.index(p)))
