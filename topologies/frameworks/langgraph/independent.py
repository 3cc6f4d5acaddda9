"""Independent on LangGraph: n replicas of the shared role, each a ReAct graph, run concurrently, then the
gold-free majority vote (protocol-v1 section 2.2).

Mirrors topologies/independent.py: replica i is member i (its own gateway route; it sends rollout seed + i on
every request, core.seeds.replica_seed), nobody reads anybody, the per-replica wall-clock cap makes a late replica
abstain, the output is the selected replica's with the vote summary in its metadata. Communication formats apply
as a prompt contract only.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import anyio

from core.benchmark import Benchmark
from core.communication import CommunicationLog
from core.topology import AgentContext
from core.models import AgentOutput, PromptBundle, Row
from core.voting import majority_vote
from topologies.frameworks.langgraph.agent import FRAMEWORK, Team, open_team, react, start_messages
from topologies.members import run_members
from topologies.messages import AgentTurn, editable, finish_output, system_prompt, tools_for
from topologies.teams import team_spec
from topologies.independent import Independent


class LangGraphIndependent(Independent):
    name = "independent"
    framework = FRAMEWORK

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        spec = team_spec(bench.name)
        role = spec.independent_role()
        comm = CommunicationLog(self.communication, bench.report_vocabulary, rerender=False)
        system = system_prompt(editable(bundle, role), answering=True, bench=bench, comm=comm, role=role,
                               policy=self.policy)
        task = bench.render_task(row)
        tools = tools_for(bench, row, self.name)
        limit = spec.independent_step_limit()
        cap = bench.independent_wall_clock_s
        turns: list[AgentTurn | None] = [None] * self.team_size

        async def replica(team: Team, member: int) -> None:
            with anyio.move_on_after(float(cap) if cap else math.inf):
                turns[member], _ = await react(team, role=role, member=member, messages=start_messages(system, task),
                                               tools=tools, reads=(), max_steps=limit,
                                               native_call_answer=bench.answer_is_native_call)

        async with open_team(ctx) as team:
            for member in range(self.team_size):
                team.link(role, member)  # every route exists before the replicas start
            await run_members(self.team_size, functools.partial(replica, team))
        return await self._vote(row, ctx, bench, role, comm, turns, cap)

    async def _vote(self, row: Row, ctx: AgentContext, bench: Benchmark, role: str, comm: CommunicationLog,
                    turns: list[AgentTurn | None], cap: float | None) -> AgentOutput:
        outputs = [AgentOutput(text=None if t is None else t.text, tool_calls=() if t is None else t.tool_calls,
                               selected_member=i) for i, t in enumerate(turns)]
        for i, t in enumerate(turns):
            comm.report(f"{role}.{i}", None if t is None else t.text)
        outputs = [await finish_output(bench, row, ctx, o) for o in outputs]
        vote = majority_vote([None if t is None else bench.vote_key(row, o) for t, o in zip(turns, outputs)])
        chosen = outputs[vote.selected]
        metadata: dict[str, Any] = {"team_size": self.team_size, "vote": vote.summary(), **comm.metadata()}
        metadata["role_outputs"] = {role: chosen.text}
        if cap:
            metadata["wall_clock_cap_s"] = float(cap)
        timed_out = [i for i, t in enumerate(turns) if t is None]
        if timed_out:
            metadata["timed_out_members"] = timed_out
        selected_turn = turns[vote.selected]
        if selected_turn is not None and selected_turn.last_tool_result is not None:
            metadata["last_tool_result"] = selected_turn.last_tool_result
        stopped = [i for i, t in enumerate(turns) if t is not None and t.stop]
        if stopped:
            metadata["step_limit_members"] = stopped
        return chosen.model_copy(update={"metadata": {**chosen.metadata, **metadata}})
