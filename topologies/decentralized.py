"""Decentralized: peer debate (Du et al. 2023; protocol-v1 section 2.5).

n peers share one `debater` prompt (with the output contract). Round 0: each peer answers alone (with the
dataset's tools). Round r >= 1: each peer's conversation gets one new user message holding the other peers'
round r-1 answers (re-rendered into the communication format) and reads those peers' round r-1 nodes. Peers
within a round run concurrently (topologies/members.py: a failing peer lets the others finish); they only read the
previous round, so the order inside a round cannot matter.
After the last round, the gold-free majority vote selects the output.
"""

from __future__ import annotations

from typing import Any

from core.benchmark import Benchmark, rerenders_handoffs
from core.communication import CommunicationLog
from core.contracts import ContractPolicy
from core.models import AgentOutput, PromptBundle, Row
from core.topology import AgentContext
from core.coalition import CoalitionGame, member_name
from core.voting import majority_vote
from topologies.coalition import DECENTRALIZED_RULE, acknowledge, mask_of, present_members
from topologies.members import run_members
from topologies.messages import (AgentTurn, editable, finish_output, react, system_prompt,
                                 tools_for)
from topologies.teams import check_team_size, team_spec

REVISE = ("Revise your answer only if a peer's reasoning or evidence is stronger than yours; otherwise keep it. "
          "End with your final answer in the required format.")


def peers_message(round_index: int, answers: list[tuple[int, str]]) -> str:
    blocks = [f"Round {round_index}: your peers' answers from round {round_index - 1}."]
    blocks += [f"PEER {member}:\n{text}" for member, text in answers]
    blocks.append(REVISE)
    return "\n\n".join(blocks)


class Decentralized:
    name = "decentralized"
    member_masks = True  # honours coalition masks (topologies/coalition.py)

    def __init__(self, team_size: int = 4, communication: str = "freeform", rounds: int | None = None,
                 contract_version: int = 1):
        self.team_size = check_team_size(self.name, team_size)
        self.communication = communication
        self.policy = ContractPolicy(contract_version)
        self.rounds = rounds
        CommunicationLog(communication)

    def roles(self, task: str, team_size: int) -> list[str]:
        return [team_spec(task).debater_role()]

    def coalition_game(self, task: str, team_size: int) -> CoalitionGame:
        role = team_spec(task).debater_role()
        return CoalitionGame(players=tuple(member_name(role, i) for i in range(self.team_size)))

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        spec = team_spec(bench.name)
        role = spec.debater_role()
        rounds = self.rounds if self.rounds is not None else spec.rounds()
        n = self.team_size
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        system = system_prompt(editable(bundle, role), answering=True, bench=bench, comm=comm, role=role,
                               policy=self.policy)
        task = bench.render_task(row)
        tools = [] if bench.answer_is_native_call else tools_for(bench, row, self.name)
        limit = spec.debate_step_limit() if tools else 1
        conversations: list[list[dict[str, Any]]] = [
            [{"role": "system", "content": system}, {"role": "user", "content": task}] for _ in range(n)]
        mask = mask_of(ctx)
        members = [m for m, runs in enumerate(present_members(role, n, mask)) if runs]  # masked peers never run
        previous: dict[int, AgentTurn] = {}
        last_tool_result: list[str | None] = [None] * n
        for round_index in range(rounds):
            reads: dict[int, tuple[str, ...]] = {m: () for m in members}
            if previous:
                shown = {m: comm.handoff(f"{role}.{m}", t.text) for m, t in previous.items()}
                for member in members:
                    others = [(m, shown[m]) for m in members if m != member]
                    conversations[member].append({"role": "user", "content": peers_message(round_index, others)})
                    reads[member] = tuple(previous[m].node_id for m in members if m != member)
            current: dict[int, AgentTurn] = {}

            async def peer(k: int) -> None:
                member = members[k]
                current[member] = await react(ctx, role=role, member=member, messages=conversations[member],
                                              tools=tools, reads=reads[member], max_steps=limit)

            await run_members(len(members), peer)
            previous = {m: current[m] for m in members if m in current}
            for member, turn in previous.items():
                comm.report(f"{role}.{member}", turn.text)
                if turn.last_tool_result is not None:
                    last_tool_result[member] = turn.last_tool_result

        # each peer's artifact is final before the vote (e.g. its own repository checkout's diff)
        voters = list(previous)
        outputs = [await finish_output(bench, row, ctx, AgentOutput(text=t.text, selected_member=m))
                   for m, t in previous.items()]
        vote = majority_vote([bench.vote_key(row, o) for o in outputs])
        chosen = outputs[vote.selected]
        metadata: dict[str, Any] = {"team_size": n, "rounds": rounds, "vote": vote.summary(), **comm.metadata(),
                                    "role_outputs": {role: chosen.text}}
        if last_tool_result[voters[vote.selected]] is not None:
            metadata["last_tool_result"] = last_tool_result[voters[vote.selected]]
        chosen = acknowledge(chosen, mask, tuple(member_name(role, m) for m in members), DECENTRALIZED_RULE)
        return chosen.model_copy(update={"metadata": {**chosen.metadata, **metadata}})
