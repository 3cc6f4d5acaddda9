"""Independent: n replicas of one shared role prompt, run concurrently, then a gold-free majority vote
(protocol-v1 section 2.2).

Replica i is member i, and the members of this topology are replicas (core.seeds.REPLICA_TOPOLOGIES): replica i
sends (rollout seed + i) mod 2^31 - 1 on every request ("Replica i sends requests with seed i (otherwise
identical)", core.seeds.replica_seed), while the messages are identical. Nobody reads anybody: the replicas' nodes
have no edges between them. The output is the selected replica's output, with the vote summary in its metadata.
Communication formats apply as a prompt contract only (there are no hand-offs). A replica that fails lets the
others finish (topologies/members.py), so the attempt's retry replays their answers.
"""

from __future__ import annotations

import math
from typing import Any

import anyio

from core.benchmark import Benchmark
from core.communication import CommunicationLog
from core.contracts import ContractPolicy
from core.coalition import CoalitionGame, member_name
from core.models import AgentOutput, PromptBundle, Row
from core.topology import AgentContext
from core.voting import majority_vote
from topologies.members import run_members
from topologies.coalition import INDEPENDENT_RULE, acknowledge, mask_of, present_members
from topologies.messages import (AgentTurn, editable, finish_output, react, system_prompt,
                                 tools_for)
from topologies.teams import check_team_size, team_spec


class Independent:
    name = "independent"
    member_masks = True  # honours coalition masks (topologies/coalition.py)

    def __init__(self, team_size: int = 4, communication: str = "freeform", contract_version: int = 1):
        self.team_size = check_team_size(self.name, team_size)
        self.communication = communication
        self.policy = ContractPolicy(contract_version)
        CommunicationLog(communication)  # validates the format name early

    def roles(self, task: str, team_size: int) -> list[str]:
        return [team_spec(task).independent_role()]

    def coalition_game(self, task: str, team_size: int) -> CoalitionGame:
        role = team_spec(task).independent_role()
        return CoalitionGame(players=tuple(member_name(role, i) for i in range(self.team_size)))

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        spec = team_spec(bench.name)
        role = spec.independent_role()
        mask = mask_of(ctx)
        runs = present_members(role, self.team_size, mask)
        comm = CommunicationLog(self.communication, bench.report_vocabulary, rerender=False)
        system = system_prompt(editable(bundle, role), answering=True, bench=bench, comm=comm, role=role,
                               policy=self.policy)
        task = bench.render_task(row)
        tools = tools_for(bench, row, self.name)
        native = bench.answer_is_native_call
        limit = spec.independent_step_limit()
        turns: list[AgentTurn | None] = [None] * self.team_size
        cap = bench.independent_wall_clock_s

        async def replica(member: int) -> None:
            if not runs[member]:
                return  # masked: never runs, abstains from the vote
            messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                              {"role": "user", "content": task}]
            with anyio.move_on_after(float(cap) if cap else math.inf):
                turns[member] = await react(ctx, role=role, member=member, messages=messages, tools=tools,
                                            reads=(), max_steps=limit, native_call_answer=native)

        await run_members(self.team_size, replica)

        # A replica past its wall-clock cap abstains (no output); members keep their indices.
        outputs = [AgentOutput(text=None if t is None else t.text, tool_calls=() if t is None else t.tool_calls,
                               selected_member=i) for i, t in enumerate(turns)]
        for i, t in enumerate(turns):
            comm.report(f"{role}.{i}", None if t is None else t.text)
        # each member's artifact is final before the vote (e.g. its own repository checkout's diff)
        outputs = [await finish_output(bench, row, ctx, o) for o in outputs]
        keys = [None if t is None else bench.vote_key(row, o) for t, o in zip(turns, outputs)]
        vote = majority_vote(keys)
        chosen = outputs[vote.selected]
        metadata: dict[str, Any] = {"team_size": self.team_size, "vote": vote.summary(),
                                    **comm.metadata()}
        metadata["role_outputs"] = {role: chosen.text}  # the shared role's output = the selected replica's
        if cap:
            metadata["wall_clock_cap_s"] = float(cap)
        timed_out = [i for i, t in enumerate(turns) if t is None and runs[i]]
        if timed_out:
            metadata["timed_out_members"] = timed_out
        selected_turn = turns[vote.selected]
        if selected_turn is not None and selected_turn.last_tool_result is not None:
            metadata["last_tool_result"] = selected_turn.last_tool_result
        stopped = [i for i, t in enumerate(turns) if t is not None and t.stop]
        if stopped:
            metadata["step_limit_members"] = stopped
        return acknowledge(chosen.model_copy(update={"metadata": {**chosen.metadata, **metadata}}), mask,
                           tuple(member_name(role, i) for i in range(self.team_size) if runs[i]), INDEPENDENT_RULE)
