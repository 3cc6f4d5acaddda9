"""`mapro`: MAPRO (Zhang et al., arXiv 2510.07475), "adapted" to protocol 8.3, native on the async runner.

1. Seed pass: the seed bundle on every train row (charged). Pools: per role the seed prompt plus up to K - 1 = 4
   rewrites by the reflection model (init cap 1,024 tokens, all requested concurrently), rewrite v shown the v-th
   worst seed transcript (the 4th: all three); identical rewrites are kept once, in role and variant order.
2. Each round: potentials on the first 3 transcripts of the latest evaluated assignment. Node potential of a
   candidate = mean pointwise judge score / 10 over those rows, the judge (TASK model, thinking off) seeing the
   transcript and the candidate's single-agent, no-tool probe reply on that row (TASK model, T 0.2, top-p 0.9,
   768 tokens). Edge potential of a candidate pair on a graph edge (chain: consecutive roles; centralized: the star
   proxy, manager first) = pointwise judge score / 10 of the pair on the same transcripts. Judge and probe calls are
   uncharged, recorded (components `judge` / `probe`) and replayed on resume. A malformed judge reply counts 5.
3. The exact max-product MAP assignment (optimizers/mapro/map_solver.py) is evaluated on all train rows (charged)
   unless it was evaluated before. Incumbent = best train mean so far (earliest on ties). A train mean is taken
   over the pass's usable rows (optimizers/scoring.py, protocol 5.3: an infrastructure failure is no score);
   a pass with none is not comparable (no incumbent change, one more round toward patience).
4. Topology-aware blame: for each of the 3 worst transcripts, the judge rates each role's share of the failure
   (`Blame: N`); the most blamed role (ties: nearest the terminal role, then native order) is rewritten by the
   reflection model (T 0.7, 512 tokens) from those transcripts; the new prompt joins its pool, replacing the
   lowest-potential non-seed, unassigned member when the pool holds K.
5. Demos on (optimizers/mapro/demos.py has the full rule and why): no extra rollout. Demo pools: per role up to 3
   of its own outputs in usable `success` (score 1) train rollouts of the incumbent's pass (rebuilt when the
   incumbent changes), rendered into the role prompt under "MAPRO Selected Demonstrations" after the instruction;
   every bundle built for a new assignment carries the pools current when it is built, so the evaluated bundle is
   the deployed one. Pools (MAP's variables, judged and probed) hold instructions only; an assignment is keyed by
   its instructions, so a change of demo pool alone buys no train pass (the plan and charging are unchanged).
   Preference pairs: every rewrite (init and mutation) of role r shows r's output on a run that succeeded next to
   its output on a shown run that failed, when both exist. Artifacts: `demo_pools` (each rebuild: round, example
   ids per role), `init_preference_pairs`, and per round `preference_pair`; bundle metadata `mapro_demo_ids`.
   Demo rows are train rows that are scored again in later train passes (as MIPRO's bootstrapped demos); the
   deployment decision is on validation rows, which never become demos.
Stops: `max_rounds` (8), `patience` (3 rounds without a train gain > 0), `budget` (the next train pass would not
fit: a pass is never cut short; section 6 lists `budget` for HiveMind, MAPRO and MASPO, `rollout_budget_spent` for
GEPA, MIPRO and MASPOB). Charged: one train pass for the seed + one per new MAP assignment.
Determinism: one `random.Random(method_rng_seed("mapro", seed))`, drawn only to pick 3 demos of a role when it has
more candidates (in role order, at each rebuild); every other choice is a pure function of recorded results;
rollout seeds are keyed by round; judge/probe/reflection keys by content. `implementation_version` 2 = demos on
(an in-progress version-1 job must not resume under it).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import partial
from typing import Any

from core.errors import ContractError, InfrastructureError, InfrastructureInvalidError
from core.models import PromptBundle, RolloutRecord, Row
from core.optimizer import CurvePoint, ModelClient, OptimizerResult, OptimizerRunner
from core.seeds import method_rng_seed
from core.vocabulary import StopReason
from optimizers.mapro.demos import DEMOS_PER_ROLE, DemoBook
from optimizers.mapro.map_solver import map_assignment
from optimizers.mapro.potentials import Potentials, gather
from optimizers.mapro.prompts import INIT_TOKENS, MUTATION_TEMPERATURE, MUTATION_TOKENS, rewrite_prompt
from optimizers.mapro.roles import role_graph, worst
from optimizers.reflective_dataset import last_fenced_block
from optimizers.scoring import UsableMean, score_of, usable_mean

STOP_BUDGET = StopReason.BUDGET
STOP_ROUNDS = StopReason.MAX_ROUNDS
STOP_PATIENCE = StopReason.PATIENCE


class Mapro:
    name = "mapro"
    smallest_useful_budget = 300  # protocol 8.9: 2 x train (150); smallest_budget() uses the actual train size
    implementation_version = 2  # 2: "demos on" (demo pools in role prompts, preference pairs in rewrites)

    def __init__(self, seed: int = 0, reflection: ModelClient | None = None, judge: ModelClient | None = None,
                 probe: ModelClient | None = None, *, pool_size: int = 5, max_rounds: int = 8, patience: int = 3,
                 n_transcripts: int = 3, n_worst: int = 3, threads: int = 12):
        self.seed, self.reflection, self.judge, self.probe = seed, reflection, judge, probe
        self.pool_size, self.max_rounds, self.patience = pool_size, max_rounds, patience
        self.n_transcripts, self.n_worst, self.threads = n_transcripts, n_worst, threads
        self.rng_seed = method_rng_seed("mapro", seed)

    def smallest_budget(self, n_train: int, n_validation: int) -> int:
        return 2 * n_train

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        passes = max(0, budget // max(n_train, 1) - 1)
        return (f"mapro: seed pass on all {n_train} train rows, then one {n_train}-row train pass per new MAP "
                f"assignment -> the {budget} budget pays for at most {min(passes, self.max_rounds)} of "
                f"<= {self.max_rounds} rounds (patience {self.patience}); pools of {self.pool_size} prompts per "
                "role; judge and probe calls on the task model and reflection calls are uncharged")

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> OptimizerResult:
        if self.reflection is None or self.judge is None or self.probe is None:
            raise ContractError("mapro needs a reflection model, a judge and a probe client (not wired)")
        return await _Run(self, runner, list(train), seed_bundle).search()


class _Run:
    def __init__(self, m: Mapro, runner: OptimizerRunner, train: list[Row], seed_bundle: PromptBundle):
        self.m, self.runner, self.train, self.seed_bundle = m, runner, train, seed_bundle
        assert m.reflection is not None and m.judge is not None and m.probe is not None
        self.reflection = m.reflection
        self.graph = role_graph(runner.roles)
        self.rows = {r.id: r for r in train}
        self.pools: dict[str, list[str]] = {r: [seed_bundle.roles[r]] for r in self.graph.roles}
        self.potentials = Potentials(runner, self.graph, m.judge, m.probe, m.threads)
        self.evaluated: dict[tuple[str, ...], float | None] = {}
        self.curve: list[CurvePoint] = []
        self.events: list[dict[str, Any]] = []
        self.best: tuple[float, PromptBundle] | None = None
        self.records: list[RolloutRecord] = []
        self.records_round = 0  # the train pass self.records come from
        self.demos = DemoBook(self.graph.roles, self.graph.terminal, random.Random(m.rng_seed))
        self.init_pairs: dict[str, list[dict[str, Any] | None]] = {}

    def bundle(self, assignment: dict[str, int]) -> PromptBundle:
        """The assignment's instructions, each followed by its role's current demo pool (rendered into the role
        prompt: that is what the runtimes send). The seed instructions without any demo are the seed bundle."""
        roles = {r: self.demos.render(r, self.pools[r][assignment[r]]) for r in self.seed_bundle.roles}
        if roles == dict(self.seed_bundle.roles):
            return self.seed_bundle
        bundle = PromptBundle(roles=roles, demos=self.seed_bundle.demos,
                              metadata={**self.seed_bundle.metadata, "optimizer": "mapro",
                                        "mapro_demo_ids": self.demos.ids()})
        self.runner.validate_bundle(bundle)
        return bundle

    def point(self, rnd: int, reason: str) -> None:
        score, bundle = self.best if self.best else (None, self.seed_bundle)
        self.curve.append(CurvePoint(self.runner.budget().charged, rnd, score, bundle.digest, reason))

    async def train_pass(self, bundle: PromptBundle, rnd: int) -> UsableMean | None:
        """Train mean of `bundle` over its usable rows (optimizers/scoring.py, protocol 5.3); None when the pass
        does not fit the remaining budget (nothing run). A pass with no usable row is not comparable."""
        if self.runner.budget().remaining < len(self.train):
            return None
        records = await self.runner.run_batch(self.train, bundle, f"round-{rnd}")
        if any(r.budget_exhausted for r in records):
            return None
        self.records, self.records_round = records, rnd
        await self.potentials.outputs.load(records)
        self.demos.add_pass(rnd, self.rows, records, self.potentials.outputs)
        found = usable_mean(records)
        if found.value is None:
            if rnd == 0:
                raise InfrastructureInvalidError(f"mapro: every one of the {len(records)} train rollouts of the "
                                                 "seed bundle ended as an infrastructure failure")
            self.point(rnd, "train_pass_not_comparable")
            return found
        mean = found.value
        if self.best is None or mean > self.best[0]:
            self.best = (mean, bundle)
            self.demos.rebuild(rnd)  # demo pools follow the incumbent's pass
            self.point(rnd, "seed_train_pass" if rnd == 0 else "incumbent_changed")
        else:
            self.point(rnd, "train_pass")
        return found

    async def search(self) -> OptimizerResult:
        stop, rounds = await self._loop()
        self.point(rounds, f"stop:{stop}")
        score, incumbent = self.best if self.best else (None, self.seed_bundle)
        artifacts = {
            "layout": "journal", "implementation_kind": "native", "stop_reason": stop,
            "policy": {"pool_size": self.m.pool_size, "max_rounds": self.m.max_rounds, "patience": self.m.patience,
                       "transcripts": self.m.n_transcripts, "worst": self.m.n_worst, "graph": self.graph.kind,
                       "edges": [list(e) for e in self.graph.edges], "rng_seed": self.m.rng_seed,
                       "demos_per_role": DEMOS_PER_ROLE},
            "native_iterations": rounds, "events": self.events, "incumbent_train_score": score,
            "incumbent_bundle": incumbent.to_json(),
            "pools": {r: list(p) for r, p in self.pools.items()},
            "demo_pools": self.demos.log, "init_preference_pairs": self.init_pairs,
            "evaluated_assignments": len(self.evaluated),
        }
        return OptimizerResult(incumbent=incumbent, stop_reason=stop, curve=tuple(self.curve), artifacts=artifacts,
                               reflection_usage=self.reflection.usage())

    async def _loop(self) -> tuple[str, int]:
        seed_assignment = {r: 0 for r in self.graph.roles}
        seed = await self.train_pass(self.seed_bundle, 0)
        if seed is None:
            return STOP_BUDGET, 0
        self.evaluated[self.key(seed_assignment)] = seed.value
        await self.init_pools()
        stale = 0
        for rnd in range(1, self.m.max_rounds + 1):
            node, edge = await self.potentials.compute(self.pools, self.first_rows())
            assignment = map_assignment(node, edge)
            entry: dict[str, Any] = {"round": rnd, "assignment": assignment, "node_potentials": node,
                                     "pool_sizes": {r: len(p) for r, p in self.pools.items()},
                                     "pools": {r: list(p) for r, p in self.pools.items()}}
            self.events.append(entry)
            key = self.key(assignment)
            before = self.best[0] if self.best else 0.0
            if key in self.evaluated:
                entry["repeat"] = True
                stale += 1
            else:
                found = await self.train_pass(self.bundle(assignment), rnd)
                if found is None:
                    entry["budget_spent"] = True
                    return STOP_BUDGET, rnd
                self.evaluated[key] = found.value
                entry.update(train_score=found.value, train_usable=found.usable, train_rows=found.rows)
                stale = 0 if found.value is not None and found.value > before else stale + 1
            if stale >= self.m.patience:
                return STOP_PATIENCE, rnd
            if rnd < self.m.max_rounds:
                await self.mutate(rnd, assignment, node, entry)
        return STOP_ROUNDS, self.m.max_rounds

    def key(self, assignment: dict[str, int]) -> tuple[str, ...]:
        return tuple(self.pools[r][assignment[r]] for r in self.graph.roles)

    def first_rows(self) -> list[tuple[Row, RolloutRecord]]:
        usable = [r for r in self.records if r.usable][: self.m.n_transcripts]
        return [(self.rows[r.example_id], r) for r in usable]

    async def rewrite(self, role: str, instruction: str, shown: list[RolloutRecord], *, purpose: str, key: str,
                      blamed: bool, preference: str | None = None) -> str | None:
        texts = [self.potentials.transcript(self.rows[r.example_id], r) for r in shown]
        limit = MUTATION_TOKENS if blamed else INIT_TOKENS
        prompt = rewrite_prompt(role, self.graph.describe(role), instruction, texts, limit=limit, blamed=blamed,
                                preference=preference)
        try:
            reply = await self.reflection.complete([{"role": "user", "content": prompt}], purpose=purpose, key=key,
                                                   temperature=MUTATION_TEMPERATURE if blamed else None,
                                                   max_tokens=limit)
        except InfrastructureError:  # the reflection endpoint kept failing: no rewrite this time (as gepa)
            return None
        text = last_fenced_block(reply)
        return None if text is None or text == instruction.strip() else text

    async def init_pools(self) -> None:
        bad = worst(self.records, self.m.n_worst)
        if not bad:
            return
        variants = ([[bad[i % len(bad)]] for i in range(self.m.pool_size - 2)] + [bad])[: self.m.pool_size - 1]
        jobs = [(role, v, shown) for role in self.graph.roles for v, shown in enumerate(variants, 1)]
        pairs = [self.demos.pair(role, 0, shown) for role, _, shown in jobs]
        for (role, _, _), pair in zip(jobs, pairs):
            self.init_pairs.setdefault(role, []).append(None if pair is None else pair.as_json())
        texts = await gather([partial(self.rewrite, role, self.pools[role][0], shown, purpose="mapro.init",
                                      key=f"init|role={role}|variant={v}", blamed=False,
                                      preference=None if pair is None else pair.render())
                              for (role, v, shown), pair in zip(jobs, pairs)], self.m.threads)
        for (role, _, _), text in zip(jobs, texts):  # appended in a fixed order, whatever the completion order
            if text is not None and text not in self.pools[role]:
                self.pools[role].append(text)

    async def mutate(self, rnd: int, assignment: dict[str, int], node: dict[str, list[float]],
                     entry: dict[str, Any]) -> None:
        bad = [r for r in worst(self.records, self.m.n_worst) if (score_of(r) or 0.0) < 1.0]  # worst: usable only
        if not bad:
            entry["mutation"] = "no_failures"
            return
        current = {r: self.pools[r][assignment[r]] for r in self.graph.roles}
        blame = await self.potentials.blame(current, [(self.rows[r.example_id], r) for r in bad])
        role = min(self.graph.roles, key=lambda r: (-blame[r], self.graph.distance_to_terminal(r),
                                                     self.graph.roles.index(r)))
        pair = self.demos.pair(role, self.records_round, bad)
        entry.update(blame=blame, blamed_role=role, preference_pair=None if pair is None else pair.as_json())
        text = await self.rewrite(role, current[role], bad, purpose="mapro.mutation", key=f"round={rnd}|role={role}",
                                  blamed=True, preference=None if pair is None else pair.render())
        pool = self.pools[role]
        if text is None or text in pool:
            entry["mutation"] = "no_new_prompt"
            return
        if len(pool) < self.m.pool_size:
            pool.append(text)
        else:
            victims = [i for i in range(1, len(pool)) if i != assignment[role]]
            victim = min(victims, key=lambda i: (node[role][i], -i))
            pool[victim] = text
        entry["mutation"] = role
