"""`gepa`: reflective prompt evolution (Agrawal et al., arXiv 2507.19457) under the v1 policy of protocol 8.1.

Native engine on our async runner (why not the `gepa` library: see optimizers/gepa/__init__.py). One iteration:
sample a parent from the per-instance Pareto front, take the next 3 train rows of an epoch-shuffled order, run the
parent on them (3 charged); a perfect minibatch is skipped; otherwise the reflection model rewrites ONE role of the
parent (round robin per candidate) from that role's instruction plus the rows' inputs, outputs and scorer feedback;
the child runs on the same rows (3 charged); if it strictly beats the parent it is scored on the full validation
split (|val| charged) and joins the pool. After an iteration that found a new candidate, a merge (<= 5 in all) of
two Pareto candidates with a common ancestor is screened on 5 validation rows and, when it is at least as good as
both parents there, fully validated. Stops: the ledger is spent (`rollout_budget_spent`: a batch came back with
budget-exhausted rows, or nothing remains), or 3 consecutive full validation evaluations without a new best
(`full_eval_plateau`). The incumbent is the candidate with the best validation mean (earliest on ties).

Unusable rollouts (optimizers/scoring.py, protocol 5.3) are never scores: a candidate's validation mean and its
Pareto fronts hold its usable validation rows only (a candidate with none is not comparable and does not join the
pool; a seed with none raises InfrastructureInvalidError); the minibatch and merge-screen comparisons sum the
items where both sides are usable (none: the child is rejected, `not_comparable`); a minibatch with no usable
parent row is skipped before reflection (nothing to reflect on).

Determinism: all choices draw from one `random.Random(method_rng_seed("gepa", seed))` owned by this instance and
advanced in a fixed order; the iteration number keys every request seed (runner.run_batch `iteration`) and every
reflection call (`key`), so a resumed job replays the same rollouts and reflections and reaches the same incumbent.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from core.errors import ContractError, InfrastructureError, InfrastructureInvalidError
from core.models import PromptBundle, RolloutRecord, Row
from core.optimizer import CurvePoint, OptimizerResult, OptimizerRunner, ReflectionModel
from core.seeds import method_rng_seed
from core.vocabulary import StopReason
from optimizers.gepa.pareto import Candidate, find_merge, merge_subsample, select_parent
from optimizers.gepa.sampler import EpochShuffledSampler
from optimizers.reflective_dataset import last_fenced_block, mutation_prompt, reflective_examples
from optimizers.scoring import paired_scores, score_of, usable_scores

STOP_BUDGET = StopReason.ROLLOUT_BUDGET_SPENT
STOP_PLATEAU = StopReason.FULL_EVAL_PLATEAU


def _spent(records: Sequence[RolloutRecord]) -> bool:
    return any(r.budget_exhausted for r in records)


def _scores(records: Sequence[RolloutRecord]) -> list[float | None]:
    return [score_of(r) for r in records]  # unusable (infrastructure failure): None, never GEPA's failure score 0


class Gepa:
    name = "gepa"
    smallest_useful_budget = 56  # protocol 8.9: seed on 50 validation rows + one 6-rollout proposal

    def __init__(self, seed: int = 0, reflection: ReflectionModel | None = None, *, minibatch_size: int = 3,
                 patience: int = 3, max_merge_invocations: int = 5, merge_subsample_size: int = 5,
                 use_merge: bool = True):
        self.seed = seed
        self.reflection = reflection
        self.minibatch_size = minibatch_size
        self.patience = patience
        self.max_merges = max_merge_invocations if use_merge else 0
        self.merge_n = merge_subsample_size
        self.rng = random.Random(method_rng_seed("gepa", seed))

    def smallest_budget(self, n_train: int, n_validation: int) -> int:
        """Protocol 8.9 for these split sizes: the seed on the validation split + one proposal (parent and child on
        a minibatch; 50 + 6 = 56 on every v1 dataset, 3 + 6 = 9 for a 3-row smoke run)."""
        return n_validation + 2 * self.minibatch_size

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        per_iter = 2 * self.minibatch_size
        left = budget - n_validation
        proposals = max(0, left // per_iter)
        validated = max(0, left // (per_iter + n_validation))
        return (f"gepa: seed on validation {n_validation}, then {per_iter} per iteration (parent + candidate on "
                f"{self.minibatch_size} train rows), {n_validation} more per accepted candidate (merges, at most "
                f"{self.max_merges}: {self.merge_n} + {n_validation}) -> at most {proposals} proposals, of which at "
                f"most {validated} can be fully validated; stops when the {budget} rollouts are spent or after "
                f"{self.patience} full validations without improvement")

    # ------------------------------------------------------------------ search
    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> OptimizerResult:
        if self.reflection is None:
            raise ContractError("gepa needs a reflection model (none was wired)")
        run = _Run(self, runner, list(train), list(validation), seed_bundle)
        return await run.search()


class _Run:
    def __init__(self, method: Gepa, runner: OptimizerRunner, train: list[Row], validation: list[Row],
                 seed_bundle: PromptBundle):
        self.m, self.runner, self.train, self.val = method, runner, train, validation
        self.rng = method.rng
        self.reflection = method.reflection
        self.seed_bundle = seed_bundle
        self.roles = list(runner.roles)
        self.rows = {r.id: r for r in train}
        self.pool: list[Candidate] = []
        self.curve: list[CurvePoint] = []
        self.log: list[dict[str, Any]] = []
        self.partial: list[dict[str, Any]] = []
        self.sampler = EpochShuffledSampler([r.id for r in train], method.minibatch_size, self.rng)
        self.full_evals = 0
        self.stale = 0
        self.merges_due = 0
        self.merges_done = 0
        self.found_new = False
        self.tried_triplets: set[tuple[int, int, int]] = set()
        self.tried_descriptions: set[tuple[int, int, tuple[int, ...]]] = set()

    # ------------------------------------------------------------------ helpers
    def best(self) -> Candidate:
        return max(self.pool, key=lambda c: (c.mean, -c.index))

    def point(self, iteration: int, reason: str) -> None:
        inc = self.best() if self.pool else None  # no candidate yet: the seed, unscored (its evaluation was cut)
        self.curve.append(CurvePoint(charged_rollouts=self.runner.budget().charged, native_iteration=iteration,
                                     native_observed_score=inc.mean if inc else None,
                                     bundle_hash=inc.bundle.digest if inc else self.seed_bundle.digest,
                                     reason=reason))

    def child_bundle(self, roles: dict[str, str]) -> PromptBundle:
        bundle = PromptBundle(roles=roles, demos=self.seed_bundle.demos,
                              metadata={**self.seed_bundle.metadata, "optimizer": "gepa"})
        self.runner.validate_bundle(bundle)
        return bundle

    async def full_validation(self, bundle: PromptBundle, iteration: int, parents: tuple[int, ...], origin: str,
                              role: str | None) -> Candidate | None:
        """Score on every validation row; None (and a log entry) when the ledger cut the evaluation short."""
        records = await self.runner.run_batch(self.val, bundle, iteration)
        if _spent(records):
            self.partial.append({"iteration": iteration, "origin": origin, "bundle_sha256": bundle.digest,
                                 "rows_scored": sum(not r.budget_exhausted for r in records)})
            return None
        before = self.best() if self.pool else None
        val_scores = usable_scores(records)
        if not val_scores:
            self.partial.append({"iteration": iteration, "origin": origin, "bundle_sha256": bundle.digest,
                                 "rows_scored": 0, "not_comparable": "no usable validation row"})
            if before is None:
                raise InfrastructureInvalidError(f"gepa: every one of the {len(records)} validation rollouts of "
                                                 "the seed bundle ended as an infrastructure failure")
            return None
        next_role = max((self.pool[p].next_role for p in parents), default=0)
        cand = Candidate(index=len(self.pool), bundle=bundle, parents=parents, origin=origin, iteration=iteration,
                         val_scores=val_scores,
                         charged_at_discovery=self.runner.budget().charged, role=role, next_role=next_role)
        self.pool.append(cand)
        if before is None:
            self.point(iteration, "seed_full_validation")
            return cand
        self.full_evals += 1
        self.found_new = True
        if self.merges_done + self.merges_due < self.m.max_merges:
            self.merges_due += 1
        if cand.mean > before.mean:
            self.stale = 0
            self.point(iteration, "incumbent_changed")
        else:
            self.stale += 1
            self.point(iteration, "full_validation")
        return cand

    # ------------------------------------------------------------------ loop
    async def search(self) -> OptimizerResult:
        stop = await self._loop()
        inc = self.best() if self.pool else Candidate(index=0, bundle=self.seed_bundle, parents=(), origin="seed",
                                                       iteration=0, val_scores={}, charged_at_discovery=0)
        self.point(self.log[-1]["iteration"] if self.log else 0, f"stop:{stop}")
        artifacts = {
            "implementation_kind": "native",
            "policy": {"minibatch_size": self.m.minibatch_size, "patience": self.m.patience,
                       "max_merge_invocations": self.m.max_merges, "merge_subsample": self.m.merge_n,
                       "candidate_selection": "pareto", "component_selector": "round_robin",
                       "skip_perfect_score": True, "rng_seed": method_rng_seed("gepa", self.m.seed)},
            "candidates": [{"index": c.index, "parents": list(c.parents), "origin": c.origin, "role": c.role,
                            "iteration": c.iteration, "validation_mean": c.mean,
                            "validation_usable": len(c.val_scores),
                            "charged_at_discovery": c.charged_at_discovery, "bundle_sha256": c.bundle.digest,
                            "roles": dict(c.bundle.roles)} for c in self.pool],
            "incumbent_candidate": inc.index, "full_validations": self.full_evals, "merges": self.merges_done,
            "iterations": self.log, "partial_validations": self.partial, "stop_reason": stop,
        }
        return OptimizerResult(incumbent=inc.bundle, stop_reason=stop, curve=tuple(self.curve), artifacts=artifacts,
                               reflection_usage=self.reflection.usage() if self.reflection else {})

    async def _loop(self) -> str:
        if await self.full_validation(self.seed_bundle, 0, (), "seed", None) is None:
            return STOP_BUDGET
        iteration = 0
        while True:
            if self.stale >= self.m.patience:
                return STOP_PLATEAU
            if self.runner.budget().remaining <= 0:
                return STOP_BUDGET
            iteration += 1
            entry: dict[str, Any] = {"iteration": iteration}
            self.log.append(entry)
            if self.merges_due > 0 and self.found_new:
                self.found_new = False
                if await self._merge(iteration, entry):
                    continue
                if entry.get("budget_spent"):
                    return STOP_BUDGET
            self.found_new = False
            if not await self._mutate(iteration, entry):
                return STOP_BUDGET

    async def _merge(self, iteration: int, entry: dict[str, Any]) -> bool:
        """One merge attempt; True when it consumed the iteration (screened, accepted or not)."""
        plan = find_merge(self.pool, self.rng, self.tried_triplets, self.tried_descriptions)
        if plan is None:
            entry["merge"] = "no_pair"
            return False
        p1, p2 = self.pool[plan.id1], self.pool[plan.id2]
        ids = merge_subsample(p1.val_scores, p2.val_scores, self.rng, self.m.merge_n)
        bundle = self.child_bundle(plan.roles)
        by_id = {r.id: r for r in self.val}
        # its own iteration key: the screen and the full validation of the same bundle must not share rollout keys
        records = await self.runner.run_batch([by_id[i] for i in ids], bundle, f"{iteration}:merge-screen")
        entry.update(kind="merge", parents=[plan.id1, plan.id2], ancestor=plan.ancestor, subsample=ids)
        if _spent(records):
            entry["budget_spent"] = True
            return False
        got = {r.example_id: s for r, s in zip(records, _scores(records)) if s is not None}
        if not got:
            entry.update(accepted=False, not_comparable="no usable screen row")
            return True
        new = sum(got.values())  # over the usable screen rows; the parents' sums over the same rows
        old = max(sum(p1.val_scores[i] for i in got), sum(p2.val_scores[i] for i in got))
        entry.update(subsample_score=new, parents_best_subsample_score=old, screen_usable=len(got),
                     accepted=new >= old)
        if new < old:
            return True
        self.merges_due -= 1
        self.merges_done += 1
        cand = await self.full_validation(bundle, iteration, (plan.id1, plan.id2), "merge", None)
        if cand is None:
            entry["budget_spent"] = True
            return False
        entry["candidate"] = cand.index
        return True

    async def _mutate(self, iteration: int, entry: dict[str, Any]) -> bool:
        """One reflective mutation; False when the ledger ran out."""
        parent = select_parent(self.pool, self.rng)
        role = self.roles[parent.next_role % len(self.roles)]
        parent.next_role = (parent.next_role + 1) % len(self.roles)
        ids = self.sampler.next()
        rows = [self.rows[i] for i in ids]
        entry.update(kind="mutation", parent=parent.index, role=role, minibatch=ids)
        before = await self.runner.run_batch(rows, parent.bundle, iteration)
        if _spent(before):
            entry["budget_spent"] = True
            return False
        parent_scores = _scores(before)
        entry["parent_scores"] = parent_scores
        if all(s is None for s in parent_scores):
            entry["skipped"] = "not_comparable"  # no usable parent row: nothing to reflect on or compare with
            return True
        if all(s >= 1.0 for s in parent_scores if s is not None):
            entry["skipped"] = "perfect_minibatch"
            return True
        prompt = mutation_prompt(role, parent.bundle.roles[role], reflective_examples(rows, before, role))
        assert self.reflection is not None
        try:
            reply = await self.reflection.propose(prompt, purpose="gepa.mutation",
                                                  key=f"iteration={iteration}|role={role}|parent={parent.index}")
        except InfrastructureError as exc:
            entry["skipped"] = f"reflection_failed: {type(exc).__name__}"
            return True
        text = last_fenced_block(reply)
        if text is None or text == parent.bundle.roles[role].strip():
            entry["skipped"] = "no_new_instruction"
            return True
        child = self.child_bundle({**parent.bundle.roles, role: text})
        after = await self.runner.run_batch(rows, child, iteration)
        if _spent(after):
            entry["budget_spent"] = True
            return False
        pairs = paired_scores(before, after)  # items where parent and child are both usable
        child_sum, parent_sum = sum(c for _, c in pairs), sum(p for p, _ in pairs)
        entry.update(child_scores=_scores(after), paired_usable=len(pairs), accepted=bool(pairs) and
                     child_sum > parent_sum)
        if not pairs:
            entry["not_comparable"] = "no usable parent/child pair"
        if not entry["accepted"]:
            return True
        cand = await self.full_validation(child, iteration, (parent.index,), "mutation", role)
        if cand is None:
            entry["budget_spent"] = True
            return False
        entry["candidate"] = cand.index
        return True
