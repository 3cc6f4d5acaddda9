"""Exact max-product MAP over a pairwise graphical model, by variable elimination (max-sum in log space).

    maximize  sum_i log phi_i(x_i) + sum_(i,j) log psi_ij(x_i, x_j)     over x_i in {0, ..., K_i - 1}

Variables are eliminated one at a time (min-degree order, ties by name): the factors that mention the variable are
summed, the variable is maximised out and its argmax table kept; back-substitution in reverse elimination order
recovers a maximising assignment. This is exact on any graph (the cost grows with the induced width; MAPRO's graphs
are chains and stars of <= 10 roles with K = 5, width 1). Ties resolve to the smallest index (numpy argmax), so the
seed (index 0) wins a tie. `brute_force_map` enumerates every assignment (tests check the two agree).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Edge = tuple[str, str]


@dataclass(frozen=True)
class _Factor:
    vars: tuple[str, ...]
    table: np.ndarray  # one axis per var


def _log(values: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(values, dtype=float))


def _combine(factors: Sequence[_Factor]) -> _Factor:
    names: list[str] = []
    for f in factors:
        names += [v for v in f.vars if v not in names]
    sizes: dict[str, int] = {}
    for f in factors:
        sizes.update(zip(f.vars, f.table.shape))
    total = np.zeros([sizes[v] for v in names])
    for f in factors:
        order = [f.vars.index(v) for v in names if v in f.vars]
        t = np.transpose(f.table, order)
        shape = [sizes[v] if v in f.vars else 1 for v in names]
        total = total + t.reshape(shape)
    return _Factor(tuple(names), total)


def objective(node: Mapping[str, Sequence[float]], edge: Mapping[Edge, Sequence[Sequence[float]]],
              assignment: Mapping[str, int]) -> float:
    """sum of log potentials of one assignment (-inf when a potential is 0)."""
    value = float(sum(_log(np.asarray(node[v]))[assignment[v]] for v in node))
    for (a, b), table in edge.items():
        value += float(_log(np.asarray(table))[assignment[a], assignment[b]])
    return value


def map_assignment(node: Mapping[str, Sequence[float]],
                   edge: Mapping[Edge, Sequence[Sequence[float]]]) -> dict[str, int]:
    """An exact maximiser of the product of potentials (node potentials > 0 per variable; edge tables [a][b])."""
    factors = [_Factor((v,), _log(np.asarray(p))) for v, p in node.items()]
    factors += [_Factor((a, b), _log(np.asarray(t))) for (a, b), t in edge.items()]
    remaining = list(node)
    trace: list[tuple[str, _Factor]] = []
    while remaining:
        def degree(v: str) -> tuple[int, str]:
            nbrs = {u for f in factors if v in f.vars for u in f.vars}
            return (len(nbrs), v)

        var = min(remaining, key=degree)
        remaining.remove(var)
        touching = [f for f in factors if var in f.vars]
        factors = [f for f in factors if var not in f.vars]
        joint = _combine(touching)
        axis = joint.vars.index(var)
        moved = _Factor((var,) + tuple(v for v in joint.vars if v != var), np.moveaxis(joint.table, axis, 0))
        trace.append((var, moved))
        factors.append(_Factor(moved.vars[1:], moved.table.max(axis=0)))
    assignment: dict[str, int] = {}
    for var, joint in reversed(trace):
        index = tuple(assignment[v] for v in joint.vars[1:])
        column = joint.table[(slice(None),) + index]
        assignment[var] = int(np.argmax(column))
    return {v: assignment[v] for v in node}


def brute_force_map(node: Mapping[str, Sequence[float]],
                    edge: Mapping[Edge, Sequence[Sequence[float]]]) -> tuple[dict[str, int], float]:
    """Every assignment enumerated; the first (lexicographically smallest) maximiser and its objective."""
    names = list(node)
    best: tuple[dict[str, int], float] | None = None
    for combo in itertools.product(*(range(len(node[v])) for v in names)):
        a = dict(zip(names, combo))
        value = objective(node, edge, a)
        if best is None or value > best[1]:
            best = (a, value)
    assert best is not None
    return best
