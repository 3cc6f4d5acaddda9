"""One HiveMind cycle (protocol 8.5): coalitions under member masks, Shapley credit, one reflection, the gate.

1. plan the coalitions of the workers (shapley.plan_coalitions; the Monte-Carlo permutations from the plan RNG);
2. run the incumbent on the cycle's k training rows once per coalition, the absent workers masked
   (core/coalition.py MemberMask through SessionRunner.run_paired: every coalition sees the same rows AND seeds);
   a coalition's value is its usable mean (no usable rollout: 0); an empty coalition with nobody to run (no
   anchor: sequential, independent, decentralized) is worth 0 without a rollout;
3. credit every player (Shapley); the target is the lowest-credit player's role, the manager every 3rd cycle;
4. reflect on the target's prompt from the full coalition's failure and success cases (lessons.py, T 0.7);
5. with a new lesson, the candidate (target prompt = seed prompt + latest <= 6 lessons) and the incumbent run on
   the same k validation rows and seeds; the candidate is accepted only if strictly better.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from core.coalition import CoalitionGame, MemberMask
from core.errors import InfrastructureError
from core.models import PromptBundle, RolloutRecord, Row
from core.optimizer import ModelClient, SessionRunner
from optimizers.hivemind import lessons, shapley
from optimizers.mapro.potentials import gather
from optimizers.reflective_dataset import last_fenced_block
from optimizers.scoring import usable_mean

MANAGER_EVERY = 3
COALITION_THREADS = 8  # coalition batches in flight at once (the runner's concurrency bounds the rollouts)


@dataclass
class TeamState:
    """What the cycles change: the incumbent's lessons per role (its prompts are composed from them)."""

    seed_bundle: PromptBundle
    game: CoalitionGame
    lessons: dict[str, list[str]] = field(default_factory=dict)

    def bundle(self, lessons_of: dict[str, list[str]]) -> PromptBundle:
        roles = {role: lessons.compose(text, lessons_of.get(role, []))
                 for role, text in self.seed_bundle.roles.items()}
        if roles == dict(self.seed_bundle.roles):
            return self.seed_bundle
        return PromptBundle(roles=roles, demos=self.seed_bundle.demos,
                            metadata={**self.seed_bundle.metadata, "optimizer": "hivemind"})

    @property
    def incumbent(self) -> PromptBundle:
        return self.bundle(self.lessons)


def target_role(cycle: int, credit: dict[str, float], game: CoalitionGame) -> str:
    """The role reflected on: the anchor (the manager) every 3rd cycle, else the lowest-credit player's role."""
    if game.anchor is not None and (cycle % MANAGER_EVERY == 0 or not game.players):
        return game.anchor
    return game.role_of(shapley.lowest(credit, game.players))


def runs(coalition: shapley.Coalition, game: CoalitionGame) -> bool:
    """Whether a coalition is a rollout (the empty one only when the anchor runs alone; else it is worth 0)."""
    return bool(coalition) or game.empty_runs


async def coalition_values(runner: SessionRunner, plan: shapley.Plan, game: CoalitionGame, rows: Sequence[Row],
                           bundle: PromptBundle, key: str) -> tuple[dict[shapley.Coalition, float], list[RolloutRecord]]:
    """Each planned coalition's value, and the full coalition's records (the reflection's cases). The coalitions'
    batches run concurrently (COALITION_THREADS at once); the cycle's sizes fit the remainder, so none is trimmed
    and what each returns does not depend on the order they finish in."""
    run = [c for c in plan.coalitions if runs(c, game)]
    masks = [MemberMask(tuple(p for p in plan.players if p not in c)) for c in run]
    batches = await gather([partial(runner.run_paired, rows, bundle, key, key, control=mask) for mask in masks],
                           COALITION_THREADS)
    values = {c: 0.0 for c in plan.coalitions}
    values.update({c: usable_mean(records).value or 0.0 for c, records in zip(run, batches)})
    full = next((list(b) for c, b in zip(run, batches) if c == frozenset(plan.players)), [])
    return values, full


async def reflect(reflection: ModelClient, state: TeamState, role: str, found: Sequence[lessons.Case],
                  key: str) -> str | None:
    """The new lesson for `role` (None: the reflection failed or added nothing)."""
    so_far = state.lessons.get(role, [])
    prompt = lessons.reflection_prompt(role, state.incumbent.roles[role], so_far, found)
    try:
        reply = await reflection.complete([{"role": "user", "content": prompt}], purpose=lessons.PURPOSE, key=key,
                                          temperature=lessons.REFLECTION_TEMPERATURE)
    except InfrastructureError:
        return None
    return lessons.new_lesson(last_fenced_block(reply), so_far)


async def gate(runner: SessionRunner, rows: Sequence[Row], current: PromptBundle, candidate: PromptBundle,
               key: str) -> tuple[float | None, float | None, bool]:
    """(current score, candidate score, accepted): paired on the same rows and seeds, strictly better only."""
    both = await gather([partial(runner.run_paired, rows, b, key, key) for b in (current, candidate)], 2)
    now, new = (usable_mean(records).value for records in both)
    return now, new, now is not None and new is not None and new > now


def event(cycle: int, rows: int, plan: shapley.Plan, values: dict[shapley.Coalition, float],
          credit: dict[str, float], target: str) -> dict[str, Any]:
    return {"cycle": cycle, "rows": rows, "exact": not plan.permutations, "permutations": len(plan.permutations),
            "coalitions": [{"members": sorted(c), "value": round(values[c], 6)} for c in plan.coalitions],
            "credit": {p: round(v, 6) for p, v in credit.items()}, "target": target}
