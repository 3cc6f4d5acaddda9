"""MASPO credit: pairwise A/B judging of paired rollouts and the joint reward (protocol 8.4).

For item i, the candidate is shown as response B on even items and as A on odd ones (no fixed position); a
malformed or failed judge reply is a loss for the candidate. Only items where both rollouts are usable are
credited or judged (protocol 5.3, optimizers/scoring.py); a candidate with none is not comparable (None). Judge
calls (component `judge`, uncharged, recorded, replayed on resume) run at most `threads` (4) at once across all
offspring of a node and land in input order.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import anyio

from core.errors import InfrastructureError
from core.models import RolloutRecord, Row
from core.optimizer import ModelClient, OptimizerRunner
from optimizers.mapro.potentials import gather
from optimizers.mapro.roles import RoleGraph
from optimizers.maspo.reward import Reward, joint_reward, mean, outcome, refresh_reward, verdict
from optimizers.maspo.templates import GENERIC, Judging, Templates, role_place
from optimizers.reflective_dataset import task_text
from optimizers.scoring import paired_scores
from optimizers.transcripts import RoleOutputs


class Credit:
    def __init__(self, runner: OptimizerRunner, graph: RoleGraph, judge: ModelClient, threads: int,
                 templates: Templates = GENERIC):
        self.runner, self.graph, self.judge, self.threads = runner, graph, judge, threads
        self.templates = templates  # the task's judge template (optimizers/maspo/templates.py)
        self.outputs = RoleOutputs(runner)  # role outputs of loaded rollouts (optimizers/transcripts.py)
        self._in_flight = anyio.CapacityLimiter(max(1, threads))  # shared by concurrent offspring: <= 4 in all

    async def load(self, records: Sequence[RolloutRecord]) -> None:
        """Read the transcripts of a batch's usable rollouts (one read off the event loop) before credit uses them."""
        await self.outputs.load(records)

    async def _judge(self, role: str, row: Row, parent: str, child: str, position: int, key: str) -> float:
        child_is = "B" if position % 2 == 0 else "A"
        a, b = (parent, child) if child_is == "B" else (child, parent)
        prompt = self.templates.pairwise(Judging(role, role_place(self.graph, role), row.id, task_text(row), a, b))
        try:
            async with self._in_flight:
                reply = await self.judge.complete([{"role": "user", "content": prompt}], purpose="maspo.pairwise",
                                                  key=f"{key}|role={role}|row={row.id}")
        except InfrastructureError:
            return 0.0
        return verdict(reply, child_is)

    async def _verdicts(self, role: str, rows: Sequence[Row], parents: Sequence[RolloutRecord],
                        children: Sequence[RolloutRecord], key: str) -> float | None:
        """Mean verdict on `role`'s output over the items where both rollouts are usable and have one; None if
        there is none (an infrastructure failure's partial output is not judged: it is no observation)."""
        jobs = []
        for i, (row, p, c) in enumerate(zip(rows, parents, children)):
            if not (p.usable and c.usable):
                continue
            po, co = self.outputs(p).get(role), self.outputs(c).get(role)
            if po is not None and co is not None:
                jobs.append(partial(self._judge, role, row, po, co, i, key))
        return mean(await gather(jobs, self.threads)) if jobs else None

    @staticmethod
    def global_credit(parents: Sequence[RolloutRecord], children: Sequence[RolloutRecord]) -> float | None:
        """Mean win/tie/loss against the parent over the items where both are usable (optimizers/scoring.py);
        None when there is no such item: the candidate is not comparable."""
        return mean([outcome(c, p) for p, c in paired_scores(parents, children)])

    async def reward(self, role: str, rows: Sequence[Row], parents: Sequence[RolloutRecord],
                     children: Sequence[RolloutRecord], key: str) -> Reward | None:
        """The joint reward; None (not comparable) when no item has both rollouts usable."""
        g = self.global_credit(parents, children)
        if g is None:
            return None
        shared, terminal = self.graph.kind == "shared", role == self.graph.terminal
        if shared or terminal:
            return joint_reward(local=None, lookahead=None, global_=g, terminal=terminal, shared=shared)
        local = await self._verdicts(role, rows, parents, children, key)
        successor = self.graph.successor(role)
        ahead = None if successor is None else await self._verdicts(successor, rows, parents, children, key)
        return joint_reward(local=local, lookahead=ahead, global_=g, terminal=False, shared=False)

    async def refresh(self, role: str, rows: Sequence[Row], reference: Sequence[RolloutRecord],
                      member: Sequence[RolloutRecord], key: str) -> Reward | None:
        g = self.global_credit(reference, member)
        if g is None:
            return None
        shared, terminal = self.graph.kind == "shared", role == self.graph.terminal
        local = None if shared or terminal else await self._verdicts(role, rows, reference, member, key)
        return refresh_reward(local=local, global_=g, terminal=terminal, shared=shared)
