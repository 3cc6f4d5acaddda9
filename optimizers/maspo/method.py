"""`maspo`: MASPO (Wang et al., arXiv 2605.06623), re-implemented per protocol 8.4, native on the async runner.

Coordinate ascent over roles (optimizers/mapro/roles.py: native order, terminal role last; centralized: workers,
then the manager). A role's turn is up to 3 depth steps (at most 9 per role over the search). A depth step (one
search node) draws a fresh minibatch of 10 train rows; every beam member (beam K = 2) is run as the parent, then 2
offspring per parent are proposed by the reflection model (T 0.7), one from each minibatch half's traces, and run on
the same 10 rows with the same request seeds (paired rollouts). Each offspring gets the joint reward
(optimizers/maspo/reward.py) from the pairwise A/B judge (TASK model, T 0, <= 1,024 tokens, at most 4 in flight)
on its own and its successor's outputs and from the dataset metric against the parent; the beam keeps the K best
(parents first on ties). At the end of the turn the role's best member enters the system. On a revisit the beam
is refreshed: its members are re-scored against the current system on a fresh minibatch (<= 30 rollouts).
Misalignment mining: a parent rollout the team failed is kept as a case of each role (buffer 3 per role, newest
kept); a proposal for a role shows up to 5 cases sampled from its predecessors' buffers. A shared-prompt team
(one role) gets global credit only. Only training rows are used. Credit is taken on the items where parent and
offspring are both usable (optimizers/scoring.py, protocol 5.3); an offspring with none is not comparable.
Proposal and judge prompts come from the task's templates (optimizers/maspo/templates.py: MATH's own, role-aware;
any other dataset the generic prompts.py), the task being the dataset its train rows name (`Row.dataset`).
Stops: `budget` (the next batch would not fit) or `maximum_search_depth` (every role reached depth 9). Charged
per step: parent + 2 offspring on 10 rows = 30 per beam member (<= 60). Draws (minibatches, injected cases) come
from one `random.Random(method_rng_seed("maspo", s))`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from core.errors import ContractError, InfrastructureError
from core.models import PromptBundle, RolloutRecord, Row
from core.optimizer import CurvePoint, ModelClient, OptimizerResult, OptimizerRunner
from core.seeds import method_rng_seed
from core.vocabulary import StopReason
from optimizers.mapro.potentials import gather
from optimizers.mapro.roles import role_graph
from optimizers.maspo.credit import Credit
from optimizers.maspo.prompts import PROPOSAL_TEMPERATURE, Trace
from optimizers.maspo.reward import Reward
from optimizers.maspo.templates import Proposal, role_place, task_of, templates_for
from optimizers.reflective_dataset import last_fenced_block, task_text
from optimizers.scoring import score_of, usable_mean

STOP_BUDGET = StopReason.BUDGET
STOP_DEPTH = StopReason.MAXIMUM_SEARCH_DEPTH


class _Stop(Exception):
    pass


@dataclass
class Member:
    prompt: str
    reward: float
    origin: str


class Maspo:
    name = "maspo"
    smallest_useful_budget = 20  # protocol 8.9: parent + one offspring on 10 rows (30 for both offspring)
    implementation_version = 2  # 2: MATH jobs propose and judge with the MATH templates (optimizers/maspo/templates.py)

    def __init__(self, seed: int = 0, reflection: ModelClient | None = None, judge: ModelClient | None = None, *,
                 beam: int = 2, offspring: int = 2, minibatch: int = 10, steps_per_turn: int = 3, max_depth: int = 9,
                 buffer: int = 3, inject: int = 5, judge_threads: int = 4):
        self.seed, self.reflection, self.judge = seed, reflection, judge
        self.beam, self.offspring, self.minibatch = beam, offspring, minibatch
        self.steps_per_turn, self.max_depth, self.buffer, self.inject = steps_per_turn, max_depth, buffer, inject
        self.judge_threads = judge_threads
        self.rng_seed = method_rng_seed("maspo", seed)

    def smallest_budget(self, n_train: int, n_validation: int) -> int:
        return 2 * min(self.minibatch, n_train)

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        mb = min(self.minibatch, n_train)
        per_member = (1 + self.offspring) * mb
        return (f"maspo: coordinate ascent over roles, beam {self.beam}, {self.offspring} offspring per parent on a "
                f"fresh {mb}-row train minibatch: {per_member} rollouts per beam member per depth step (<= "
                f"{self.beam * per_member}), <= {per_member} more on a role revisit, {self.steps_per_turn} steps per "
                f"turn, depth <= {self.max_depth} per role -> the {budget} budget pays for at least "
                f"{budget // (self.beam * per_member)} full-beam steps; pairwise judge and reflection uncharged")

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> OptimizerResult:
        if self.reflection is None or self.judge is None:
            raise ContractError("maspo needs a reflection model and a judge client (not wired)")
        return await _Run(self, runner, list(train), seed_bundle).search()


class _Run:
    def __init__(self, m: Maspo, runner: OptimizerRunner, train: list[Row], seed_bundle: PromptBundle):
        assert m.reflection is not None and m.judge is not None
        self.m, self.runner, self.train, self.seed_bundle = m, runner, train, seed_bundle
        self.reflection = m.reflection
        self.rng = random.Random(m.rng_seed)
        self.graph = role_graph(runner.roles)
        self.order = self.graph.ascent_order()
        self.templates = templates_for(task_of(train))  # the task, as the rows name it: MATH has its own templates
        self.credit = Credit(runner, self.graph, m.judge, m.judge_threads, self.templates)
        self.current = dict(seed_bundle.roles)
        self.beams = {r: [Member(seed_bundle.roles[r], 0.0, "seed")] for r in self.order}
        self.depth = {r: 0 for r in self.order}
        self.visits = {r: 0 for r in self.order}
        self.buffers: dict[str, list[str]] = {r: [] for r in self.order}
        self.node = 0
        self.events: list[dict[str, Any]] = []
        self.curve: list[CurvePoint] = []
        self.observed: float | None = None

    def bundle(self, role: str, prompt: str) -> PromptBundle:
        roles = {**self.current, role: prompt}
        if roles == dict(self.seed_bundle.roles):
            return self.seed_bundle
        bundle = PromptBundle(roles=roles, demos=self.seed_bundle.demos,
                              metadata={**self.seed_bundle.metadata, "optimizer": "maspo"})
        self.runner.validate_bundle(bundle)
        return bundle

    async def paired(self, rows: list[Row], bundle: PromptBundle) -> list[RolloutRecord]:
        if self.runner.budget().remaining < len(rows):
            raise _Stop()
        run_paired = getattr(self.runner, "run_paired", None)
        key = f"node-{self.node}"
        records = await (run_paired(rows, bundle, key, key) if callable(run_paired)
                         else self.runner.run_batch(rows, bundle, key))
        if any(r.budget_exhausted for r in records):
            raise _Stop()
        await self.credit.load(records)
        return list(records)

    def incumbent(self) -> PromptBundle:
        return self.bundle(self.order[0], self.current[self.order[0]])

    def point(self, reason: str) -> None:
        self.curve.append(CurvePoint(self.runner.budget().charged, self.node, self.observed,
                                     self.incumbent().digest, reason))

    async def search(self) -> OptimizerResult:
        try:
            stop = await self._ascent()
        except _Stop:
            stop = STOP_BUDGET
        for role in self.order:  # the best evidence of an interrupted turn still counts
            self.current[role] = self.beams[role][0].prompt
        self.point(f"stop:{stop}")
        incumbent = self.incumbent()
        artifacts = {
            "layout": "journal", "implementation_kind": "native", "stop_reason": stop,
            "policy": {"beam": self.m.beam, "offspring": self.m.offspring, "minibatch": self.m.minibatch,
                       "steps_per_turn": self.m.steps_per_turn, "max_depth": self.m.max_depth,
                       "buffer": self.m.buffer, "inject": self.m.inject, "graph": self.graph.kind,
                       "order": list(self.order), "rng_seed": self.m.rng_seed,
                       "templates": self.templates.name},
            "native_iterations": self.node, "events": self.events, "depth": dict(self.depth),
            "beams": {r: [{"prompt": b.prompt, "reward": b.reward, "origin": b.origin} for b in beam]
                      for r, beam in self.beams.items()},
            "incumbent_bundle": incumbent.to_json(),
        }
        return OptimizerResult(incumbent=incumbent, stop_reason=stop, curve=tuple(self.curve), artifacts=artifacts,
                               reflection_usage=self.reflection.usage())

    async def _ascent(self) -> str:
        self.point("seed")
        while any(self.depth[r] < self.m.max_depth for r in self.order):
            for role in self.order:
                if self.depth[role] >= self.m.max_depth:
                    continue
                if self.visits[role]:
                    await self.refresh(role)
                self.visits[role] += 1
                for _ in range(self.m.steps_per_turn):
                    if self.depth[role] >= self.m.max_depth:
                        break
                    await self.step(role)
                    self.depth[role] += 1
                self.current[role] = self.beams[role][0].prompt
                self.point("role_turn_done")
        return STOP_DEPTH

    def minibatch(self) -> list[Row]:
        self.node += 1
        return self.rng.sample(self.train, min(self.m.minibatch, len(self.train)))

    async def run_all(self, rows: list[Row], bundles: list[PromptBundle], concurrent: bool
                      ) -> list[list[RolloutRecord]]:
        return list(await gather([partial(self.paired, rows, b) for b in bundles], len(bundles) if concurrent else 1))

    async def step(self, role: str) -> None:
        """One search node. When the remaining budget covers the whole node, parents run concurrently, then all
        offspring (proposal, paired run, judged reward) concurrently: no reservation can then be refused, so the
        result does not depend on completion order. Otherwise everything runs one at a time, in order."""
        rows = self.minibatch()
        entry: dict[str, Any] = {"node": self.node, "role": role, "depth": self.depth[role] + 1,
                                 "rows": [r.id for r in rows], "offspring": []}
        self.events.append(entry)
        parents = list(self.beams[role])
        concurrent = self.runner.budget().remaining >= len(parents) * (1 + self.m.offspring) * len(rows)
        parent_recs = await self.run_all(rows, [self.bundle(role, p.prompt) for p in parents], concurrent)
        for recs in parent_recs:
            self.mine(role, rows, recs)
        half = (len(rows) + 1) // 2
        parts = [list(range(half)), list(range(half, len(rows)))][: self.m.offspring]
        jobs = [(p, h, part) for p in range(len(parents)) for h, part in enumerate(parts)]
        prompts = [self.proposal(role, parents[p].prompt, [rows[i] for i in part], [parent_recs[p][i] for i in part])
                   for p, h, part in jobs]  # injected cases drawn here, in a fixed order
        texts = await gather([partial(self.ask, prompt, parents[p].prompt, f"node={self.node}|role={role}|parent={p}"
                                      f"|half={h}") for prompt, (p, h, _) in zip(prompts, jobs)],
                             len(jobs) if concurrent else 1)
        pool = list(parents)
        children: list[tuple[int, int, str]] = []
        for (p, h, _), text in zip(jobs, texts):
            if text is None or any(text == m.prompt for m in pool) or any(text == c[2] for c in children):
                entry["offspring"].append({"parent": p, "half": h, "skipped": "no_new_prompt"})
            else:
                children.append((p, h, text))
        thunks = [partial(self.offspring, role, rows, parent_recs[p], text, f"node={self.node}|p{p}h{h}")
                  for p, h, text in children]
        rewards = await gather(thunks, len(thunks)) if concurrent else []
        for i, (p, h, text) in enumerate(children):
            reward = rewards[i] if concurrent else await thunks[i]()  # sequential: keep each result as it comes
            if reward is None:  # no item with parent and offspring both usable: never enters the beam
                entry["offspring"].append({"parent": p, "half": h, "skipped": "not_comparable"})
                continue
            pool.append(Member(text, reward.value, f"node{self.node}.p{p}.h{h}"))
            entry["offspring"].append({"parent": p, "half": h, **_reward_json(reward)})
            self.beams[role] = _best(pool, self.m.beam)
        self.beams[role] = _best(pool, self.m.beam)
        entry["beam_rewards"] = [b.reward for b in self.beams[role]]
        self.observed = usable_mean(parent_recs[0]).value
        self.point("depth_step")

    async def offspring(self, role: str, rows: list[Row], parent_recs: list[RolloutRecord], text: str,
                        key: str) -> Reward | None:
        child_recs = await self.paired(rows, self.bundle(role, text))
        return await self.credit.reward(role, rows, parent_recs, child_recs, key)

    async def refresh(self, role: str) -> None:
        """Beam refresh on a revisit: members re-scored against the current system (reference = current prompt);
        a member with no item where it and the reference are both usable is not comparable and leaves the beam."""
        rows = self.minibatch()
        reference = await self.paired(rows, self.bundle(role, self.current[role]))
        entry: dict[str, Any] = {"node": self.node, "role": role, "refresh": []}
        self.events.append(entry)
        kept = []
        for i, member in enumerate(self.beams[role]):
            if member.prompt == self.current[role]:
                member.reward = 0.0
            else:
                recs = await self.paired(rows, self.bundle(role, member.prompt))
                found = await self.credit.refresh(role, rows, reference, recs, f"node={self.node}|m{i}")
                if found is None:
                    entry["refresh"].append(None)
                    continue
                member.reward = found.value
            entry["refresh"].append(member.reward)
            kept.append(member)
        self.beams[role] = sorted(kept, key=lambda b: -b.reward) or [Member(self.current[role], 0.0, "current")]

    def mine(self, role: str, rows: list[Row], records: list[RolloutRecord]) -> None:
        for row, rec in zip(rows, records):
            score = score_of(rec)
            if score is not None and score < 1.0:  # a usable rollout the team failed
                out = self.credit.outputs(rec).get(role, "")
                case = f"Problem: {task_text(row)[:500]}\n'{role}' said: {out[:800]}\nFeedback: {rec.feedback or ''}"
                self.buffers[role] = (self.buffers[role] + [case])[-self.m.buffer:]

    def proposal(self, role: str, instruction: str, rows: list[Row], records: list[RolloutRecord]) -> str:
        traces = []
        for row, rec in zip(rows, records):
            if not rec.usable:  # an infrastructure failure is no trace to learn from (as the reflective dataset)
                continue
            outs = self.credit.outputs(rec)
            context = "\n".join(f"{r}: {t}" for r, t in outs.items() if r in self.graph.upstream(role))
            traces.append(Trace(task_text(row), context, outs.get(role, ""), rec.score, rec.feedback or ""))
        cases = [c for r in self.graph.upstream(role) for c in self.buffers[r]]
        injected = self.rng.sample(cases, min(self.m.inject, len(cases)))
        return self.templates.proposal(Proposal(role, role_place(self.graph, role), self.graph.describe(role),
                                                self.graph.successor(role), instruction, traces, injected))

    async def ask(self, prompt: str, instruction: str, key: str) -> str | None:
        try:
            reply = await self.reflection.complete([{"role": "user", "content": prompt}], purpose="maspo.proposal",
                                                   key=key, temperature=PROPOSAL_TEMPERATURE)
        except InfrastructureError:
            return None
        text = last_fenced_block(reply)
        return None if text is None or text == instruction.strip() else text


def _best(pool: list[Member], k: int) -> list[Member]:
    """The k highest rewards, earliest first among equals (parents before their offspring)."""
    return [pool[i] for i in sorted(range(len(pool)), key=lambda i: (-pool[i].reward, i))[:k]]


def _reward_json(r: Reward) -> dict[str, Any]:
    return {"reward": r.value, "rule": r.rule, "local": r.local, "lookahead": r.lookahead, "global": r.global_}
