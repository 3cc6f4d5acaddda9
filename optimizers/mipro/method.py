"""`mipro`: MIPROv2 (Opsahl-Ong et al., arXiv 2406.11695) under the v1 policy of protocol 8.2.

1. Bootstrap: run the seed bundle on train rows (seeded shuffle, batches of 5, charged) until >= 5 rollouts pass
   or two passes over train are done; passing traces (task input -> team's final output) become demos. Demo sets:
   zero-shot, the first <= 4 demos, and shuffled samples of <= 4 (one set per candidate).
2. Proposals: for every role, 3 instructions from the reflection client, each grounded on the team's roles, a data
   summary of the training split, a demo set and a DSPy proposer tip. Candidates per role = seed + proposals.
3. Search: the seed bundle is scored on the full validation split (the default trial), then each trial asks a
   seeded TPE sampler (optimizers/mipro/tpe.py) for (instruction, demo set) per role and scores that bundle on the
   FULL validation split. Only numeric scores feed the sampler. A configuration already scored is not paid twice.
   A trial's score is the mean over its usable validation rows (optimizers/scoring.py, protocol 5.3; `usable` and
   `rows` beside it); a trial with none is not comparable: not told to the sampler, not cached, never the incumbent.
Stops: `num_trials_complete`, or `rollout_budget_spent` when a batch came back with budget-exhausted rows.
Demos are rendered into the role prompt under "MIPROv2 Selected Demonstrations" (optimizers/mipro/prompts.py).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import anyio

from core.errors import ContractError, InfrastructureError, InfrastructureInvalidError
from core.models import PromptBundle, RolloutStatus, Row
from core.optimizer import CurvePoint, OptimizerResult, OptimizerRunner, ReflectionModel
from core.seeds import method_rng_seed
from core.vocabulary import StopReason
from optimizers.mipro.prompts import TIPS, data_summary, proposal_prompt, render_role_prompt
from optimizers.mipro.tpe import CategoricalTPE
from optimizers.reflective_dataset import last_fenced_block, task_text
from optimizers.scoring import usable_mean

STOP_BUDGET = StopReason.ROLLOUT_BUDGET_SPENT
STOP_TRIALS = StopReason.NUM_TRIALS_COMPLETE


class _Spent(Exception):
    pass


class Mipro:
    name = "mipro"
    smallest_useful_budget = 105  # protocol 8.9: bootstrap (>= 5) + seed on 50 validation rows + one 50-row trial

    def __init__(self, seed: int = 0, reflection: ReflectionModel | None = None, *, num_candidates: int = 3,
                 num_trials: int = 3, min_bootstrapped: int = 5, max_demos: int = 4, bootstrap_batch: int = 5,
                 n_startup_trials: int = 10):
        self.seed = seed
        self.reflection = reflection
        self.num_candidates = num_candidates
        self.num_trials = num_trials
        self.min_bootstrapped = min_bootstrapped
        self.max_demos = max_demos
        self.bootstrap_batch = bootstrap_batch
        self.n_startup_trials = n_startup_trials
        self.rng = random.Random(method_rng_seed("mipro", seed))

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        least = self.min_bootstrapped + n_validation + self.num_trials * n_validation
        most = 2 * n_train + n_validation + self.num_trials * n_validation
        trials = max(0, (budget - self.min_bootstrapped - n_validation) // max(n_validation, 1))
        return (f"mipro: bootstrap on train until >= {self.min_bootstrapped} pass (at most {2 * n_train}), seed on "
                f"validation {n_validation}, then {n_validation} per trial x {self.num_trials} trials over "
                f"{self.num_candidates + 1} instructions x {self.num_candidates + 1} demo sets per role -> "
                f"{least}..{most} rollouts; the {budget} budget pays for at most {trials} trials")

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> OptimizerResult:
        if self.reflection is None:
            raise ContractError("mipro needs a reflection model (none was wired)")
        state = _Search(self, runner, list(train), list(validation), seed_bundle)
        try:
            await state.run()
            stop = STOP_TRIALS
        except _Spent:
            stop = STOP_BUDGET
        return state.result(stop)


class _Search:
    def __init__(self, m: Mipro, runner: OptimizerRunner, train: list[Row], validation: list[Row],
                 seed_bundle: PromptBundle):
        self.m, self.runner, self.train, self.val, self.seed_bundle = m, runner, train, validation, seed_bundle
        self.rng = m.rng
        self.roles = list(runner.roles)
        self.demos: list[dict[str, Any]] = []
        self.bootstrap_attempted = 0
        self.demo_sets: list[list[dict[str, Any]]] = [[]]
        self.instructions: dict[str, list[str]] = {r: [seed_bundle.roles[r]] for r in self.roles}
        self.trials: list[dict[str, Any]] = []
        self.scored: dict[tuple[tuple[str, int], ...], float] = {}
        self.best: tuple[float, int, PromptBundle] | None = None
        self.curve: list[CurvePoint] = []
        self.proposal_log: list[dict[str, Any]] = []

    def point(self, trial: int, reason: str) -> None:
        if self.best is None:
            return
        self.curve.append(CurvePoint(charged_rollouts=self.runner.budget().charged, native_iteration=trial,
                                     native_observed_score=self.best[0], bundle_hash=self.best[2].digest,
                                     reason=reason))

    # ------------------------------------------------------------------ step 1
    async def bootstrap(self) -> None:
        order = [r.id for r in self.train]
        self.rng.shuffle(order)
        by_id = {r.id: r for r in self.train}
        queue = [(p, rid) for p in range(2) for rid in order]
        batch_no = 0
        while queue and len(self.demos) < self.m.min_bootstrapped:
            take, queue = queue[:self.m.bootstrap_batch], queue[self.m.bootstrap_batch:]
            rows = [by_id[rid] for _, rid in take]
            records = await self.runner.run_batch(rows, self.seed_bundle, f"bootstrap-{batch_no}")
            batch_no += 1
            for row, rec in zip(rows, records):
                if rec.budget_exhausted:
                    raise _Spent()
                self.bootstrap_attempted += 1
                if rec.status == RolloutStatus.SUCCESS and rec.final_output is not None:
                    self.demos.append({"inputs": task_text(row), "output": rec.final_output.text or "",
                                       **({"tool_calls": list(rec.final_output.tool_calls)}
                                          if rec.final_output.tool_calls else {})})
        sets: list[list[dict[str, Any]]] = [[]]
        if self.demos:
            sets.append(self.demos[:self.m.max_demos])
            for _ in range(self.m.num_candidates - 1):
                shuffled = list(self.demos)
                self.rng.shuffle(shuffled)
                sets.append(shuffled[:self.m.max_demos])
        unique: list[list[dict[str, Any]]] = []
        for s in sets:
            if s not in unique:
                unique.append(s)
        self.demo_sets = unique

    # ------------------------------------------------------------------ step 2
    async def propose(self) -> None:
        """All prompts are drawn first (fixed RNG order), then sent concurrently; results are used in input order."""
        summary = data_summary(self.train, len(self.demos), self.bootstrap_attempted)
        tips = sorted(TIPS)
        jobs: list[tuple[str, int, str, str]] = []
        for role in self.roles:
            for k in range(self.m.num_candidates):
                tip = self.rng.choice(tips)
                demos = self.demo_sets[self.rng.randrange(len(self.demo_sets))]
                jobs.append((role, k, tip, proposal_prompt(role=role, roles=self.roles,
                                                           instruction=self.seed_bundle.roles[role], summary=summary,
                                                           demos=demos, tip=tip, index=k)))
        replies: list[str | Exception] = [""] * len(jobs)
        reflection = self.m.reflection
        assert reflection is not None

        async def one(i: int, role: str, k: int, prompt: str) -> None:
            try:
                replies[i] = await reflection.propose(prompt, purpose="mipro.instruction",
                                                      key=f"role={role}|proposal={k}")
            except InfrastructureError as exc:
                replies[i] = exc

        async with anyio.create_task_group() as tg:
            for i, (role, k, _, prompt) in enumerate(jobs):
                tg.start_soon(one, i, role, k, prompt)
        for (role, k, tip, _), reply in zip(jobs, replies):
            entry: dict[str, Any] = {"role": role, "proposal": k, "tip": tip}
            if isinstance(reply, Exception):
                entry["skipped"] = f"reflection_failed: {type(reply).__name__}"
            else:
                text = last_fenced_block(reply)
                if text is None or text in self.instructions[role]:
                    entry["skipped"] = "no_new_instruction"
                else:
                    self.instructions[role].append(text)
                    entry["candidate"] = len(self.instructions[role]) - 1
            self.proposal_log.append(entry)

    # ------------------------------------------------------------------ step 3
    def bundle(self, config: dict[str, int]) -> PromptBundle:
        roles = {}
        for role in self.roles:
            instruction = self.instructions[role][config[f"{role}.instruction"]]
            roles[role] = render_role_prompt(instruction, self.demo_sets[config[f"{role}.demos"]])
        bundle = PromptBundle(roles=roles, demos=self.seed_bundle.demos,
                              metadata={**self.seed_bundle.metadata, "optimizer": "mipro"})
        self.runner.validate_bundle(bundle)
        return bundle

    async def evaluate(self, config: dict[str, int], trial: int) -> float | None:
        key = tuple(sorted(config.items()))
        bundle = self.bundle(config)
        entry: dict[str, Any] = {"trial": trial, "config": dict(sorted(config.items())),
                                 "bundle_sha256": bundle.digest}
        self.trials.append(entry)
        if key in self.scored:
            entry.update(score=self.scored[key], cached=True)
            return self.scored[key]
        records = await self.runner.run_batch(self.val, bundle, trial)
        if any(r.budget_exhausted for r in records):
            entry["budget_spent"] = True
            raise _Spent()
        mean = usable_mean(records)  # protocol 5.3: over the usable rows only (optimizers/scoring.py)
        entry.update(score=mean.value, usable=mean.usable, rows=mean.rows, cached=False)
        if mean.value is None:  # not comparable: not told to the sampler, never the incumbent, tried again later
            entry["not_comparable"] = "no usable validation row"
            if self.best is None:
                raise InfrastructureInvalidError(f"mipro: every one of the {len(records)} validation rollouts of "
                                                 "the seed bundle ended as an infrastructure failure")
            return None
        score = self.scored[key] = mean.value
        if self.best is None or score > self.best[0]:
            self.best = (score, trial, bundle)
            self.point(trial, "incumbent_changed" if trial else "seed_full_validation")
        else:
            self.point(trial, "full_validation")
        return score

    async def run(self) -> None:
        await self.bootstrap()
        await self.propose()
        space = {}
        for role in self.roles:
            space[f"{role}.instruction"] = len(self.instructions[role])
            space[f"{role}.demos"] = len(self.demo_sets)
        sampler = CategoricalTPE(space, self.rng, n_startup_trials=self.m.n_startup_trials)
        default = {name: 0 for name in space}
        await self.tell(sampler, default, 0)
        for trial in range(1, self.m.num_trials + 1):
            config = sampler.ask()
            for _ in range(20):  # prefer a configuration not scored yet (a repeat would re-pay 50 rollouts)
                if tuple(sorted(config.items())) not in self.scored:
                    break
                config = sampler.ask()
            await self.tell(sampler, config, trial)

    async def tell(self, sampler: CategoricalTPE, config: dict[str, int], trial: int) -> None:
        score = await self.evaluate(config, trial)
        if score is not None:  # only numeric scores of usable rows feed the sampler
            sampler.tell(config, score)

    def result(self, stop: str) -> OptimizerResult:
        incumbent = self.best[2] if self.best is not None else self.seed_bundle
        self.curve.append(CurvePoint(charged_rollouts=self.runner.budget().charged,
                                     native_iteration=self.trials[-1]["trial"] if self.trials else 0,
                                     native_observed_score=self.best[0] if self.best else None,
                                     bundle_hash=incumbent.digest, reason=f"stop:{stop}"))
        artifacts = {
            "implementation_kind": "native",
            "policy": {"num_candidates": self.m.num_candidates, "num_trials": self.m.num_trials,
                       "min_bootstrapped": self.m.min_bootstrapped, "max_bootstrapped_demos": self.m.max_demos,
                       "max_labeled_demos": 0, "sampler": "categorical-tpe",
                       "n_startup_trials": self.m.n_startup_trials,
                       "rng_seed": method_rng_seed("mipro", self.m.seed)},
            "bootstrap": {"attempted": self.bootstrap_attempted, "passed": len(self.demos),
                          "demo_sets": [len(s) for s in self.demo_sets]},
            "instructions": {r: list(v) for r, v in self.instructions.items()},
            "proposals": self.proposal_log, "trials": self.trials, "stop_reason": stop,
        }
        assert self.m.reflection is not None
        return OptimizerResult(incumbent=incumbent, stop_reason=stop, curve=tuple(self.curve), artifacts=artifacts,
                               reflection_usage=self.m.reflection.usage())
