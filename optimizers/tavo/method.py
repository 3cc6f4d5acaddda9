"""`tavo`: TAVO / TRUCE (protocol 8.8), native on the engine's async, ledger-bound runner.

Seed: the seed bundle is scored on the validation batch (optimizers/tavo/gate.py; charged). Then rounds (<= 5),
each of <= 2 attempts (the second is the retry of a rejected first); an attempt starts only if its rollouts fit:
1. the current incumbent runs on the fixed train batch (6 rows, Random(233 + s); fresh request seeds per attempt);
2. each usable rollout's transcript (SessionRunner.transcripts) is cut into sub-trajectories
   (optimizers/tavo/segments.py), each scored by the judge at T 0.3, and every (example, role) gets its Eq.-3
   credit (optimizers/tavo/credit.py; TAVO_CREDIT=0: outcome only, no judge call);
3. the reflection model (T 0.5) aggregates the credited cases into the meta-knowledge, then writes the candidate
   (optimizers/tavo/policy.py: one shared overlay appended to every role prompt by default);
4. the candidate runs on the validation batch (paired with the seed's seeds) and passes the gate, or not.
Judge and reflection calls are recorded and uncharged, and replayed on resume like the rollouts. Charged:
V (seed) + per attempt (6 + V), V = 50 at B = 600: at most 50 + 9 * 56 = 554 rollouts.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import partial
from typing import Any

from core.errors import ContractError, InfrastructureError
from core.models import PromptBundle, RolloutRecord, Row
from core.optimizer import CurvePoint, ModelClient, OptimizerResult, OptimizerRunner
from core.seeds import method_rng_seed
from core.vocabulary import StopReason
from optimizers.mapro.potentials import gather
from optimizers.reflective_dataset import last_fenced_block
from optimizers.scoring import usable_mean
from optimizers.tavo import policy
from optimizers.tavo.credit import NEUTRAL, Case, Scored, cases_of, score_segments
from optimizers.tavo.segments import Segment, segments
from optimizers.tavo.gate import TRAIN_BATCH, Gate, adopt, smallest_budget, validation_size

JUDGE_THREADS = 4


class Tavo:
    name = "tavo"
    smallest_useful_budget = 12  # protocol 8.9 (train 150 / validation 50)

    def __init__(self, seed: int = 0, reflection: ModelClient | None = None, judge: ModelClient | None = None, *,
                 mode: str = policy.DEFAULT_MODE, credit: bool = True, judge_threads: int = JUDGE_THREADS):
        if mode not in policy.MODES:
            raise ContractError(f"tavo: unknown mode {mode!r}; modes: {', '.join(policy.MODES)}")
        self.seed, self.reflection, self.judge = seed, reflection, judge
        self.mode, self.credit, self.judge_threads = mode, credit, judge_threads
        self.rng_seed = method_rng_seed("tavo", seed)

    def smallest_budget(self, n_train: int, n_validation: int) -> int:
        return smallest_budget(n_train, n_validation)

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        t, v = min(TRAIN_BATCH, n_train), validation_size(budget, n_validation)
        attempts = max(0, (budget - v) // (t + v))
        return (f"tavo ({self.mode}{', no credit' if not self.credit else ''}): seed on a {v}-row validation batch "
                f"({v} rollouts), then <= 5 rounds of <= 2 attempts, each {t} train + {v} validation = {t + v} "
                f"rollouts; the {budget} budget pays for {min(attempts, 10)} attempts; an attempt starts only if it "
                "fits; sub-trajectory judge (T 0.3) and reflection (T 0.5) uncharged")

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> OptimizerResult:
        if self.reflection is None or (self.credit and self.judge is None):
            raise ContractError("tavo needs a reflection model and a judge client (not wired)")
        return await _Run(self, runner, list(train), list(validation), seed_bundle, budget).search()


class _Run:
    def __init__(self, m: Tavo, runner: OptimizerRunner, train: list[Row], validation: list[Row],
                 seed_bundle: PromptBundle, budget: int):
        assert m.reflection is not None
        self.m, self.runner, self.seed_bundle, self.reflection = m, runner, seed_bundle, m.reflection
        rng = random.Random(m.rng_seed)
        self.train = rng.sample(train, min(TRAIN_BATCH, len(train)))
        self.validation = rng.sample(validation, validation_size(budget, len(validation)))
        self.gate = Gate(per_attempt=len(self.train) + len(self.validation))
        self.roles = tuple(runner.roles)
        self.incumbent, self.prompts, self.overlay, self.meta = seed_bundle, dict(seed_bundle.roles), "", ""
        self.seed_score: float | None = None
        self.best = 0.0
        self.events: list[dict[str, Any]] = []
        self.curve: list[CurvePoint] = []

    def point(self, reason: str, score: float | None) -> None:
        self.curve.append(CurvePoint(self.runner.budget().charged, len(self.events), score, self.incumbent.digest,
                                     reason))

    async def validate(self, bundle: PromptBundle) -> float | None:
        run_paired = getattr(self.runner, "run_paired", None)
        records = await (run_paired(self.validation, bundle, "validation", "validation") if callable(run_paired)
                         else self.runner.run_batch(self.validation, bundle, "validation"))
        return usable_mean(records).value

    async def search(self) -> OptimizerResult:
        stop = StopReason.BUDGET
        if self.runner.budget().remaining >= len(self.validation):
            self.seed_score = await self.validate(self.seed_bundle)
            self.best = self.seed_score or 0.0
            self.point("seed", self.seed_score)
            while (found := self.gate.next_attempt(self.runner.budget().remaining)) is None:
                await self.attempt()
            stop = found
        self.point(f"stop:{stop}", self.best)
        artifacts = {
            "layout": "search", "implementation_kind": "native", "production_eligible": True, "stop_reason": stop,
            "policy": {"mode": self.m.mode, "credit": self.m.credit, "train_batch": [r.id for r in self.train],
                       "validation_batch": len(self.validation), "rng_seed": self.m.rng_seed},
            "seed_validation_score": self.seed_score, "events": self.events, "meta_knowledge": self.meta,
            "overlay": self.overlay, "selected_bundle": self.incumbent.to_json(),
            "incumbent_bundle": self.incumbent.to_json(),
        }
        return OptimizerResult(incumbent=self.incumbent, stop_reason=stop, curve=tuple(self.curve),
                               artifacts=artifacts, reflection_usage=self.reflection.usage())

    async def attempt(self) -> None:
        r, a = self.gate.round, self.gate.attempt
        key = f"round={r}|attempt={a}"
        entry: dict[str, Any] = {"round": r, "attempt": a}
        self.events.append(entry)
        records = await self.runner.run_batch(self.train, self.incumbent, f"train-r{r}a{a}")
        cases = await self.credit(records, key)
        entry["credit"] = [{"example": c.row.id, "role": c.role, "credit": round(c.credit, 6)} for c in cases]
        meta = await self.ask(policy.meta_knowledge_prompt(self.meta, cases, self.roles), "tavo.meta_knowledge",
                              key) or self.meta
        prompts, overlay = dict(self.prompts), self.overlay
        if policy.refines_roles(self.m.mode):
            texts = await gather([partial(self.ask, policy.refine_prompt(role, prompts[role], meta, cases),
                                          "tavo.refine", f"{key}|role={role}") for role in self.roles], 4)
            prompts = {role: text or prompts[role] for role, text in zip(self.roles, texts)}
        if policy.uses_overlay(self.m.mode):
            overlay = await self.ask(policy.overlay_prompt(overlay, meta, cases, self.roles), "tavo.overlay",
                                     key) or overlay
        candidate = self.bundle(prompts, overlay)
        score = None
        if candidate.digest != self.incumbent.digest:
            score = await self.validate(candidate)
        adopted = self.seed_score is not None and adopt(score, self.seed_score, self.best)
        entry.update(candidate_validation_score=score, adopted=adopted, bundle_sha256=candidate.digest)
        if adopted and score is not None:
            self.incumbent, self.prompts, self.overlay, self.meta, self.best = candidate, prompts, overlay, meta, score
        self.gate.record(adopted)
        self.point("adopted" if adopted else "rejected", self.best)

    def bundle(self, prompts: dict[str, str], overlay: str) -> PromptBundle:
        roles = policy.with_overlay(prompts, overlay)
        if roles == dict(self.seed_bundle.roles):
            return self.seed_bundle
        bundle = PromptBundle(roles=roles, demos=self.seed_bundle.demos,
                              metadata={**self.seed_bundle.metadata, "optimizer": "tavo"})
        self.runner.validate_bundle(bundle)
        return bundle

    async def credit(self, records: Sequence[RolloutRecord], key: str) -> list[Case]:
        usable = [(row, rec) for row, rec in zip(self.train, records) if rec.usable]
        read = getattr(self.runner, "transcripts", None)
        transcripts = await read([rec for _, rec in usable]) if callable(read) and usable else []
        cut = [segments(t) for t in transcripts] if transcripts else [[] for _ in usable]
        if self.m.credit and self.m.judge is not None:
            judged = await gather([partial(score_segments, self.m.judge, row, rec, segs, key, self.m.judge_threads)
                                   for (row, rec), segs in zip(usable, cut)], 1)
        else:
            judged = [[_unjudged(s) for s in segs] for segs in cut]
        return [c for (row, rec), scored in zip(usable, judged)
                for c in cases_of(row, rec, scored, self.roles, self.m.credit)]

    async def ask(self, prompt: str, purpose: str, key: str) -> str | None:
        try:
            reply = await self.reflection.complete([{"role": "user", "content": prompt}], purpose=purpose, key=key,
                                                   temperature=policy.REFLECTION_TEMPERATURE)
        except InfrastructureError:
            return None
        text = last_fenced_block(reply)
        return text.strip() if text and text.strip() else None



def _unjudged(segment: Segment) -> Scored:
    return Scored(segment, (NEUTRAL, NEUTRAL, NEUTRAL))
