"""A rough cost of a sweep before it runs: rollouts, model calls and tokens.

Rollouts per job: the search budget (0 for identity) plus the evaluations: seed and incumbent on validation, seed and
deployed on test (the seed bundle's two are shared by every method of a condition and seed, so they count once).
Calls per rollout and tokens per call are coarse, stated assumptions (below), not measurements; bench/
grid_projection.py measures them on simulated jobs. Each method's own budget plan (its `plan()` line) is printed
beside the numbers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from core.cell import parse_cell
from engine.sweep.plan import JobSpec

ROOT = Path(__file__).resolve().parents[2]
# Assumed model calls per rollout by topology (team size n): one answer per agent, plus a manager's / aggregator's
# turns where the topology has one.
CALLS = {"single": lambda n: 1, "independent": lambda n: n + 1, "sequential": lambda n: n,
         "centralized": lambda n: 2 * n + 1, "decentralized": lambda n: 2 * n}
PROMPT_TOKENS_PER_CALL = 1500  # assumption: system prompt + task + context of one agent turn
COMPLETION_TOKENS_PER_CALL = 400  # assumption: one answer with thinking off


def calls_per_rollout(cell: str) -> int:
    """The assumed model calls of one rollout of `cell` (CALLS): the unit `sweep status` weighs work in."""
    c = parse_cell(cell)
    return int(CALLS[c.topology](c.team_size))


@dataclass(frozen=True)
class Cost:
    jobs: int
    rollouts: int
    shared_rollouts_saved: int
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    shared_calls_saved: int = 0  # the model calls of shared_rollouts_saved


def split_sizes(task: str) -> tuple[int, int, int]:
    data = json.loads((ROOT / "benchmarks" / task / f"{task}_splits.json").read_text(encoding="utf-8"))
    return len(data["train"]), len(data["validation"]), len(data["test"])


def estimate(jobs: list[JobSpec], budget: int) -> Cost:
    rollouts = calls = saved = saved_calls = 0
    seen_seed_evals: set[tuple[str, int]] = set()
    for j in jobs:
        cell = parse_cell(j.cell)
        _, n_val, n_test = split_sizes(cell.task)
        per_call = CALLS[cell.topology](cell.team_size)
        search = 0 if j.method == "identity" else budget
        seed_evals = n_val + n_test
        condition = (j.registry_key + "|" + j.cell, j.seed)
        shared = condition in seen_seed_evals
        seen_seed_evals.add(condition)
        own = 0 if j.method == "identity" else search + n_val + n_test  # identity deploys the seed bundle
        mine = own + (0 if shared else seed_evals)
        saved += seed_evals if shared else 0
        saved_calls += seed_evals * per_call if shared else 0
        rollouts += mine
        calls += mine * per_call
    return Cost(len(jobs), rollouts, saved, calls, calls * PROMPT_TOKENS_PER_CALL, calls * COMPLETION_TOKENS_PER_CALL,
                saved_calls)


def method_plans(jobs: list[JobSpec], budget: int) -> dict[str, str]:
    """Each method's own budget plan line, for the first task it runs on."""
    from optimizers.registry import get_optimizer

    plans: dict[str, str] = {}
    for j in jobs:
        if j.method not in plans:
            n_train, n_val, _ = split_sizes(parse_cell(j.cell).task)
            plans[j.method] = get_optimizer(j.method, seed=0).plan(budget, n_train, n_val)
    return plans
