"""Decentralized on LangGraph: peer debate rounds (protocol-v1 section 2.5).

A StateGraph with one node per round; a round node runs every peer's ReAct graph concurrently (each peer its own
gateway route, so its own request seeds). Mirrors topologies/decentralized.py: one shared `debater` prompt with
the output contract; from round 1 on, each peer's conversation gets one user message with the other peers'
previous-round answers (`topologies.decentralized.peers_message`, re-rendered into the communication format) and
its first call in the round reads those peers' previous-round nodes; after the last round the gold-free majority
vote (core.voting, the benchmark's vote keys) selects the output. The round graph is compiled once per round
count; each rollout's `Debate` comes with the run's `config["configurable"]`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from core.benchmark import Benchmark, rerenders_handoffs
from core.communication import CommunicationLog
from core.topology import AgentContext
from core.models import AgentOutput, PromptBundle, Row
from core.voting import majority_vote
from topologies.frameworks.langgraph.agent import FRAMEWORK, Team, episode_of, open_team, react, start_messages
from topologies.decentralized import Decentralized, peers_message
from topologies.members import run_members
from topologies.messages import AgentTurn, editable, finish_output, system_prompt, tools_for
from topologies.teams import team_spec


class DebateState(TypedDict):
    conversations: list[list[AnyMessage]]
    previous: list[AgentTurn]
    last_tool_result: list[str | None]


class LangGraphDecentralized(Decentralized):
    name = "decentralized"
    framework = FRAMEWORK

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
        async with open_team(ctx) as team:
            for member in range(n):
                team.link(role, member)
            debate = Debate(self, team, row, bench, comm, role)
            state = await debate_graph(rounds).ainvoke(
                {"conversations": [start_messages(system, task) for _ in range(n)], "previous": [],
                 "last_tool_result": [None] * n},
                config={"recursion_limit": rounds + 2, "configurable": {"debate": debate}})
        previous: list[AgentTurn] = state["previous"]
        outputs = [await finish_output(bench, row, ctx, AgentOutput(text=t.text, selected_member=m))
                   for m, t in enumerate(previous)]
        vote = majority_vote([bench.vote_key(row, o) for o in outputs])
        chosen = outputs[vote.selected]
        metadata: dict[str, Any] = {"team_size": n, "rounds": rounds, "vote": vote.summary(), **comm.metadata(),
                                    "role_outputs": {role: chosen.text}}
        if state["last_tool_result"][vote.selected] is not None:
            metadata["last_tool_result"] = state["last_tool_result"][vote.selected]
        return chosen.model_copy(update={"metadata": {**chosen.metadata, **metadata}})


def _round_node(round_index: int) -> Any:
    async def debate_round(state: DebateState, config: RunnableConfig) -> dict[str, Any]:
        debate: Debate = episode_of(config)["debate"]
        return await debate.round(round_index, state)

    return debate_round


@cache
def debate_graph(rounds: int) -> Any:
    """One node per round in a line, compiled once per round count."""
    graph = StateGraph(DebateState)
    names = [f"round_{r}" for r in range(rounds)]
    for r, name in enumerate(names):
        graph.add_node(name, _round_node(r))
    for a, b in zip([START, *names], [*names, END]):
        graph.add_edge(a, b)
    return graph.compile()


@dataclass
class Debate:
    """One rollout's debate (the run configuration of the shared round graph)."""

    topology: LangGraphDecentralized
    team: Team
    row: Row
    bench: Benchmark
    comm: CommunicationLog
    role: str

    async def round(self, round_index: int, state: DebateState) -> dict[str, Any]:
        bench, comm, role, team = self.bench, self.comm, self.role, self.team
        tools = [] if bench.answer_is_native_call else tools_for(bench, self.row, self.topology.name)
        limit = team_spec(bench.name).debate_step_limit() if tools else 1
        n = self.topology.team_size
        previous = state["previous"]
        conversations = [list(c) for c in state["conversations"]]
        reads: list[tuple[str, ...]] = [()] * n
        if previous:
            shown = [comm.handoff(f"{role}.{m}", t.text) for m, t in enumerate(previous)]
            for member in range(n):
                others = [(m, shown[m]) for m in range(n) if m != member]
                conversations[member].append(HumanMessage(content=peers_message(round_index, others)))
                reads[member] = tuple(previous[m].node_id for m in range(n) if m != member)
        current: list[AgentTurn | None] = [None] * n

        async def peer(member: int) -> None:
            current[member], added = await react(team, role=role, member=member, messages=conversations[member],
                                                 tools=tools, reads=reads[member], max_steps=limit)
            conversations[member].extend(added)

        await run_members(n, peer)
        turns = [t for t in current if t is not None]
        last_results = list(state["last_tool_result"])
        for member, turn in enumerate(turns):
            comm.report(f"{role}.{member}", turn.text)
            if turn.last_tool_result is not None:
                last_results[member] = turn.last_tool_result
        return {"conversations": conversations, "previous": turns, "last_tool_result": last_results}
