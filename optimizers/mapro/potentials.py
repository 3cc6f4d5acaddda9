"""MAPRO's LLM-judged potentials and blame (protocol 8.3), on the TASK model through recorded, uncharged clients.

Calls run concurrently (at most `threads` in flight) and land in pre-allocated slots, so every table is in input
order whatever the completion order. Keys are content-based (role, row; the prompt hash is in the seed), so an
identical judge or probe request is answered from the store rather than sent again, within a run and on resume.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any

import anyio

from core.canonical import sha256_hex
from core.errors import InfrastructureError
from core.models import RolloutRecord, Row
from core.optimizer import ModelClient, OptimizerRunner
from optimizers.mapro.prompts import blame_prompt, edge_judge_prompt, node_judge_prompt
from optimizers.mapro.roles import RoleGraph, parse_blame, parse_score, render_transcript
from optimizers.transcripts import RoleOutputs
from optimizers.reflective_dataset import task_text

NEUTRAL_SCORE = 5  # a malformed or failed judge reply
Case = tuple[Row, RolloutRecord]


async def gather(thunks: Sequence[Callable[[], Awaitable[Any]]], limit: int) -> list[Any]:
    """Run the thunks in a task group, at most `limit` at once; results in input order. A failure cancels the
    others and propagates as itself (the first leaf of the task group's exception group), not as a group."""
    out: list[Any] = [None] * len(thunks)
    limiter = anyio.CapacityLimiter(max(1, limit))

    async def one(i: int) -> None:
        async with limiter:
            out[i] = await thunks[i]()

    try:
        async with anyio.create_task_group() as tg:
            for i in range(len(thunks)):
                tg.start_soon(one, i)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        raise leaf from None
    return out


class Potentials:
    def __init__(self, runner: OptimizerRunner, graph: RoleGraph, judge: ModelClient, probe: ModelClient,
                 threads: int):
        self.runner, self.graph, self.judge, self.probe, self.threads = runner, graph, judge, probe, threads
        self.failed_calls = 0
        self._memo: dict[tuple[Any, ...], tuple[dict[str, list[float]], dict[tuple[str, str], list[list[float]]]]] = {}

        # the last recorded reply per role of loaded rollouts (SessionRunner.transcripts, optimizers/transcripts.py)
        self.outputs = RoleOutputs(runner)

    def transcript(self, row: Row, record: RolloutRecord) -> str:
        return render_transcript(row, record, self.outputs(record))

    async def _ask(self, client: ModelClient, messages: list[dict[str, str]], purpose: str, key: str) -> str:
        try:
            return await client.complete(messages, purpose=purpose, key=key)
        except InfrastructureError:
            self.failed_calls += 1
            return ""

    async def _score(self, prompt: str, purpose: str, key: str) -> int:
        reply = await self._ask(self.judge, [{"role": "user", "content": prompt}], purpose, key)
        found = parse_score(reply)
        return NEUTRAL_SCORE if found is None else max(1, found)

    async def _node(self, role: str, candidate: str, case: Case, transcript: str) -> int:
        row, _ = case
        key = f"role={role}|row={row.id}|cand={sha256_hex(candidate)[:16]}"
        probe = await self._ask(self.probe, [{"role": "system", "content": candidate},
                                             {"role": "user", "content": task_text(row)}], "mapro.probe", key)
        prompt = node_judge_prompt(role, self.graph.describe(role), candidate, transcript, probe)
        return await self._score(prompt, "mapro.node", key)

    async def _edge(self, sender: str, receiver: str, sent: str, received: str, texts: Sequence[str]) -> int:
        key = f"edge={sender}>{receiver}|pair={sha256_hex(sent)[:16]}:{sha256_hex(received)[:16]}"
        return await self._score(edge_judge_prompt(sender, receiver, sent, received, list(texts)), "mapro.edge", key)

    async def compute(self, pools: Mapping[str, Sequence[str]], cases: Sequence[Case]
                      ) -> tuple[dict[str, list[float]], dict[tuple[str, str], list[list[float]]]]:
        """Node and edge potentials. Edge judgements do not depend on node scores, so both kinds of call share one
        task group (at most `threads` in flight in all): node thunks (probe then judge) first, edge thunks after,
        each landing in its own slot, so the tables are the same whatever the completion order. A round whose pools
        and transcripts repeat an earlier round's (a repeated MAP assignment with no new rewrite) reuses its tables:
        every call would be the same content-keyed request, answered from the store (unless one failed)."""
        memo_key = (tuple(tuple(pools[r]) for r in self.graph.roles), tuple(rec.rollout_id for _, rec in cases))
        if memo_key in self._memo:  # the same pools judged on the same transcripts: the same (recorded) answers
            return copy.deepcopy(self._memo[memo_key])
        failed = self.failed_calls
        node, edge = await self._compute(pools, cases)
        if self.failed_calls == failed:  # a failed call is sent again next time, as before
            self._memo[memo_key] = copy.deepcopy((node, edge))
        return node, edge

    async def _compute(self, pools: Mapping[str, Sequence[str]], cases: Sequence[Case]
                       ) -> tuple[dict[str, list[float]], dict[tuple[str, str], list[list[float]]]]:
        texts = [self.transcript(row, rec) for row, rec in cases]
        node_jobs = [(role, i, c) for role in self.graph.roles for i in range(len(pools[role]))
                     for c in range(len(cases))]
        edge_jobs = [(s, r, a, b) for s, r in self.graph.edges for a in range(len(pools[s]))
                     for b in range(len(pools[r]))]
        scores = await gather([*(partial(self._node, role, pools[role][i], cases[c], texts[c])
                                 for role, i, c in node_jobs),
                               *(partial(self._edge, s, r, pools[s][a], pools[r][b], texts)
                                 for s, r, a, b in edge_jobs)], self.threads)
        node_scores, edge_scores = scores[:len(node_jobs)], scores[len(node_jobs):]
        node: dict[str, list[float]] = {r: [0.0] * len(pools[r]) for r in self.graph.roles}
        for (role, i, _), score in zip(node_jobs, node_scores):
            node[role][i] += score / 10.0 / max(1, len(cases))
        if not cases:
            node = {r: [1.0] * len(pools[r]) for r in self.graph.roles}
        edge: dict[tuple[str, str], list[list[float]]] = {
            (s, r): [[1.0] * len(pools[r]) for _ in pools[s]] for s, r in self.graph.edges}
        for (s, r, a, b), score in zip(edge_jobs, edge_scores):
            edge[(s, r)][a][b] = score / 10.0
        return node, edge

    async def blame(self, current: Mapping[str, str], cases: Sequence[Case]) -> dict[str, float]:
        jobs = [(role, c) for role in self.graph.roles for c in range(len(cases))]
        texts = [self.transcript(row, rec) for row, rec in cases]

        async def one(role: str, c: int) -> int:
            prompt = blame_prompt(role, self.graph.describe(role), current[role], texts[c])
            reply = await self._ask(self.judge, [{"role": "user", "content": prompt}], "mapro.blame",
                                    f"role={role}|row={cases[c][0].id}")
            found = parse_blame(reply)
            return 0 if found is None else found

        scores = await gather([partial(one, role, c) for role, c in jobs], self.threads)
        blame = {r: 0.0 for r in self.graph.roles}
        for (role, _), score in zip(jobs, scores):
            blame[role] += score / max(1, len(cases))
        return blame
