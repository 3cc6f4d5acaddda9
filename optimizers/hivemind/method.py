"""`hivemind`: HiveMind CG-OPO (protocol 8.5), native on the engine's async, ledger-bound runner.

The coalition game is the topology's (core/coalition.py CoalitionGame, on the runner as `game`): centralized, the
workers are the players and the manager the anchor, always present (the empty coalition = the manager alone);
sequential, every stage is a player; independent and decentralized, every replica (`role#i`) is a player and
the credit of a replica goes to the shared role's prompt; without an anchor the empty coalition is worth 0. Cycles (optimizers/hivemind/cycle.py) run until the budget
cannot pay a cycle with 1-row batches (budget.py). The incumbent is the seed bundle plus every accepted lesson.
Method RNGs (section 5.5, hm_seed 0): the plan (Monte-Carlo permutations) Random(90001 * s + hm_seed), the row
order (training and validation rows, shuffled once, read in consecutive windows) Random(100003 * s + hm_seed).
Reflection calls are recorded and uncharged, and replayed on resume like the rollouts; every rollout decision is
a pure function of the recorded rollouts, so a re-run after a kill reaches the same incumbent.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from core.errors import ContractError
from core.models import PromptBundle, Row
from core.optimizer import CurvePoint, ModelClient, OptimizerResult, OptimizerRunner, SessionRunner
from core.vocabulary import StopReason
from optimizers.hivemind import budget, lessons, shapley
from optimizers.hivemind.cycle import TeamState, coalition_values, event, gate, reflect, runs, target_role

HM_SEED = 0
PLAN_RNG, ROW_RNG = 90001, 100003


class HiveMind:
    name = "hivemind"
    # protocol 8.9: 10 for a centralized team (8 coalitions x 1 row + 2 validation rollouts); a 4-player game
    # (sequential, independent, decentralized) needs 17 for its first cycle (15 coalitions run; 8.9 says 18)
    smallest_useful_budget = budget.smallest_budget(2 ** 3)

    def __init__(self, seed: int = 0, reflection: ModelClient | None = None):
        self.seed, self.reflection = seed, reflection
        self.plan_seed = PLAN_RNG * seed + HM_SEED
        self.row_seed = ROW_RNG * seed + HM_SEED

    def plan(self, budget_: int, n_train: int, n_validation: int) -> str:
        per = budget.cycle_cost(2 ** 3)
        return (f"hivemind: cycles of every coalition of the team's players (a centralized 4-agent team: 8, the "
                f"manager always present; a 4-player game: 15 run, the empty one is worth 0) x {budget.ROWS} train "
                f"rows + {budget.ROWS} validation rows for the incumbent and the candidate = {per} rollouts "
                f"(centralized; 85 for a 4-player game); the {budget_} budget pays for {budget_ // per} full "
                f"centralized cycles, then batches shrink to fit (down to 1 row); reflection "
                f"(T {lessons.REFLECTION_TEMPERATURE}) uncharged")

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget_: int) -> OptimizerResult:
        if self.reflection is None:
            raise ContractError("hivemind needs a reflection model (not wired)")
        if not callable(getattr(runner, "run_paired", None)) or getattr(runner, "game", None) is None:
            raise ContractError("hivemind needs a session runner with a coalition game (paired, masked rollouts)")
        session: SessionRunner = runner  # type: ignore[assignment]
        return await _Run(self, session, list(train), list(validation), seed_bundle).search()


class _Run:
    def __init__(self, m: HiveMind, runner: SessionRunner, train: list[Row], validation: list[Row],
                 seed_bundle: PromptBundle):
        assert m.reflection is not None
        self.m, self.runner, self.reflection = m, runner, m.reflection
        assert runner.game is not None
        self.game = runner.game
        self.state = TeamState(seed_bundle=seed_bundle, game=runner.game)
        self.plan_rng = random.Random(m.plan_seed)
        rows = random.Random(m.row_seed)
        self.train, self.validation = rows.sample(train, len(train)), rows.sample(validation, len(validation))
        self.cursor = {"train": 0, "validation": 0}
        self.events: list[dict[str, Any]] = []
        self.curve: list[CurvePoint] = []
        self.observed: float | None = None

    def window(self, split: str, k: int) -> list[Row]:
        rows = self.train if split == "train" else self.validation
        start = self.cursor[split]
        self.cursor[split] = (start + k) % max(1, len(rows))
        return [rows[(start + i) % len(rows)] for i in range(min(k, len(rows)))]

    def point(self, reason: str) -> None:
        self.curve.append(CurvePoint(self.runner.budget().charged, len(self.events), self.observed,
                                     self.state.incumbent.digest, reason))

    async def search(self) -> OptimizerResult:
        self.point("seed")
        cycle = 0
        while True:
            plan = shapley.plan_coalitions(self.game.players, self.plan_rng)
            k = budget.batch_rows(sum(runs(c, self.game) for c in plan.coalitions), self.runner.budget().remaining)
            if k == 0 or not self.train:
                break
            cycle += 1
            await self.cycle(cycle, plan, k)
        stop = StopReason.BUDGET
        self.point(f"stop:{stop}")
        incumbent = self.state.incumbent
        artifacts = {
            "layout": "journal", "implementation_kind": "native", "stop_reason": stop,
            "policy": {"rows": budget.ROWS, "anchor": self.game.anchor, "players": list(self.game.players),
                       "plan_rng_seed": self.m.plan_seed, "row_rng_seed": self.m.row_seed,
                       "max_lessons": lessons.MAX_LESSONS, "manager_every": 3},
            "native_iterations": cycle, "events": self.events, "lessons": self.state.lessons,
            "incumbent_bundle": incumbent.to_json(),
        }
        return OptimizerResult(incumbent=incumbent, stop_reason=stop, curve=tuple(self.curve), artifacts=artifacts,
                               reflection_usage=self.reflection.usage())

    async def cycle(self, c: int, plan: shapley.Plan, k: int) -> None:
        rows = self.window("train", k)
        current = self.state.incumbent
        values, full = await coalition_values(self.runner, plan, self.game, rows, current, f"cycle{c}")
        credit = shapley.shapley(plan, values)
        target = target_role(c, credit, self.game)
        entry = event(c, k, plan, values, credit, target)
        self.events.append(entry)
        lesson = await reflect(self.reflection, self.state, target, lessons.cases(rows, full),
                               f"cycle={c}|role={target}")
        entry["lesson"] = lesson
        if lesson is None:
            self.point("no_lesson")
            return
        proposed = {**self.state.lessons, target: [*self.state.lessons.get(target, []), lesson]}
        candidate = self.state.bundle(proposed)
        self.runner.validate_bundle(candidate)
        now, new, accepted = await gate(self.runner, self.window("validation", k), current, candidate,
                                        f"validation{c}")
        entry.update(current_validation_score=now, candidate_validation_score=new, accepted=accepted,
                     bundle_sha256=candidate.digest)
        if accepted:
            self.state.lessons = proposed
        self.observed = new if accepted else now
        self.point("accepted" if accepted else "rejected")
