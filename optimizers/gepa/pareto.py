"""GEPA's candidate pool: per-instance Pareto fronts over the validation rows, parent sampling, merge pairing.

Ported from gepa-ai/gepa (gepa_utils.py, proposer/merge.py; MIT) onto plain values. Every choice draws from the
`random.Random` the method owns, and every iteration order is made explicit (sorted ids, ascending indices), so the
same pool and the same RNG state always give the same choice.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from core.models import PromptBundle


@dataclass
class Candidate:
    index: int
    bundle: PromptBundle
    parents: tuple[int, ...]
    origin: str  # "seed" | "mutation" | "merge"
    iteration: int
    val_scores: dict[str, float]
    charged_at_discovery: int
    role: str | None = None
    next_role: int = 0  # round-robin pointer: the next role this candidate mutates when chosen as a parent

    @property
    def mean(self) -> float:
        return sum(self.val_scores.values()) / len(self.val_scores) if self.val_scores else 0.0


def instance_fronts(pool: Sequence[Candidate]) -> dict[str, set[int]]:
    """For each validation id, the candidates achieving the best score on it."""
    fronts: dict[str, set[int]] = {}
    ids = sorted({i for c in pool for i in c.val_scores})
    for vid in ids:
        scored = [(c.val_scores[vid], c.index) for c in pool if vid in c.val_scores]
        best = max(s for s, _ in scored)
        fronts[vid] = {idx for s, idx in scored if s == best}
    return fronts


def _dominated(y: int, others: set[int], fronts: dict[str, set[int]]) -> bool:
    """y is dominated when every front holding y also holds another surviving candidate."""
    holding = [front for front in fronts.values() if y in front]
    return bool(holding) and all(front & others for front in holding)


def dominators(fronts: dict[str, set[int]], scores: dict[int, float]) -> list[int]:
    """Candidates left on some front after removing dominated ones (weakest checked first), ascending index."""
    programs = sorted({p for front in fronts.values() for p in front}, key=lambda p: (scores[p], p))
    dominated: set[int] = set()
    changed = True
    while changed:
        changed = False
        for y in programs:
            if y in dominated:
                continue
            if _dominated(y, set(programs) - {y} - dominated, fronts):
                dominated.add(y)
                changed = True
                break
    return sorted(p for p in programs if p not in dominated)


def select_parent(pool: Sequence[Candidate], rng: random.Random) -> Candidate:
    """Sample a parent from the Pareto front, weighted by the number of validation rows it is best on."""
    fronts = instance_fronts(pool)
    scores = {c.index: c.mean for c in pool}
    keep = set(dominators(fronts, scores))
    sampling: list[int] = []
    for vid in sorted(fronts):
        sampling.extend(sorted(fronts[vid] & keep))
    if not sampling:
        return pool[0]
    return pool[rng.choice(sampling)]


def ancestors(pool: Sequence[Candidate], index: int) -> set[int]:
    found: set[int] = set()
    stack = list(pool[index].parents)
    while stack:
        p = stack.pop()
        if p not in found:
            found.add(p)
            stack.extend(pool[p].parents)
    return found


@dataclass(frozen=True)
class MergePlan:
    roles: dict[str, str]
    id1: int
    id2: int
    ancestor: int
    source: tuple[int, ...]


def _desirable(pool: Sequence[Candidate], anc: int, i: int, j: int) -> bool:
    a, x, y = pool[anc].bundle.roles, pool[i].bundle.roles, pool[j].bundle.roles
    return any((a[r] == x[r] or a[r] == y[r]) and x[r] != y[r] for r in a)


def find_merge(pool: Sequence[Candidate], rng: random.Random, tried_triplets: set[tuple[int, int, int]],
               tried_descriptions: set[tuple[int, int, tuple[int, ...]]], max_attempts: int = 10
               ) -> MergePlan | None:
    """Two Pareto dominators with a common ancestor that both outperform it; each role comes from the descendant
    that changed it (GEPA's `sample_and_attempt_merge_programs_by_common_predictors`)."""
    scores = {c.index: c.mean for c in pool}
    merge_candidates = dominators(instance_fronts(pool), scores)
    if len(merge_candidates) < 2 or len(pool) < 3:
        return None
    for _ in range(max_attempts):
        triplet = None
        for _ in range(max_attempts):
            i, j = sorted(rng.sample(merge_candidates, 2))
            anc_i, anc_j = ancestors(pool, i), ancestors(pool, j)
            if i in anc_j or j in anc_i:
                continue
            common = sorted(a for a in anc_i & anc_j if (i, j, a) not in tried_triplets
                            and scores[a] <= scores[i] and scores[a] <= scores[j] and _desirable(pool, a, i, j))
            if common:
                weights = [scores[a] for a in common]
                anc = rng.choices(common, k=1, weights=weights if sum(weights) > 0 else None)[0]
                triplet = (i, j, anc)
                break
        if triplet is None:
            continue
        i, j, anc = triplet
        roles: dict[str, str] = {}
        source: list[int] = []
        a, x, y = pool[anc].bundle.roles, pool[i].bundle.roles, pool[j].bundle.roles
        for role in sorted(a):
            if (a[role] == x[role] or a[role] == y[role]) and x[role] != y[role]:
                pick = j if a[role] == x[role] else i
            elif a[role] != x[role] and a[role] != y[role]:
                pick = i if scores[i] > scores[j] else j if scores[j] > scores[i] else rng.choice([i, j])
            else:
                pick = i
            roles[role] = pool[pick].bundle.roles[role]
            source.append(pick)
        description = (i, j, tuple(source))
        if description in tried_descriptions:
            continue
        tried_triplets.add(triplet)
        tried_descriptions.add(description)
        return MergePlan(roles={r: roles[r] for r in a}, id1=i, id2=j, ancestor=anc, source=tuple(source))
    return None


def merge_subsample(s1: dict[str, float], s2: dict[str, float], rng: random.Random, n: int = 5) -> list[str]:
    """Validation ids to screen a merge on: where parent 1 wins, where parent 2 wins, then ties."""
    common = sorted(set(s1) & set(s2))
    buckets = ([v for v in common if s1[v] > s2[v]], [v for v in common if s2[v] > s1[v]],
               [v for v in common if s1[v] == s2[v]])
    each = max(1, math.ceil(n / 3))
    chosen: list[str] = []
    for bucket in buckets:
        if len(chosen) >= n:
            break
        available = [v for v in bucket if v not in chosen]
        take = min(len(available), each, n - len(chosen))
        if take > 0:
            chosen += rng.sample(available, k=take)
    remaining = n - len(chosen)
    if remaining > 0:
        unused = [v for v in common if v not in chosen]
        chosen += rng.sample(unused, k=min(remaining, len(unused)))
    return chosen[:n]
