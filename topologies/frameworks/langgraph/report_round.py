"""Centralized for team specs in mode `report_round`, on LangGraph (protocol-v1 section 2.4): a StateGraph
worker_1 -> ... -> worker_k -> manager. Each worker runs once on the task (a ReAct graph when it has tools); the
manager reads every worker's re-rendered report in one model call and its message is the answer. Mirrors
topologies/report_round.py (its instruction, manager note and message layout are reused). The graph is compiled
once per worker list; each rollout's `Round` comes with the run's `config["configurable"]`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from core.benchmark import Benchmark
from core.communication import CommunicationLog
from core.contracts import ContractPolicy
from core.models import AgentOutput, PromptBundle, Row
from topologies.frameworks.langgraph.agent import Team, episode_of, react, start_messages
from topologies.messages import editable, system_prompt
from topologies.report_round import WORKER_INSTRUCTION, manager_message, manager_note
from topologies.teams import CentralizedTeam


class RoundState(TypedDict):
    reports: list[tuple[str, str]]
    nodes: list[str]
    role_outputs: dict[str, str | None]
    last_tool_result: str | None
    answer: str | None


@dataclass
class Round:
    """One rollout's report round (the run configuration of the shared round graph)."""

    agents: Team
    team: CentralizedTeam
    task: str
    bundle: PromptBundle
    bench: Benchmark
    comm: CommunicationLog
    policy: ContractPolicy
    tools: list[dict[str, Any]]

    async def worker(self, index: int, state: RoundState) -> dict[str, Any]:
        worker, comm = self.team.workers[index], self.comm
        system = system_prompt(editable(self.bundle, worker.name), answering=worker.answers, bench=self.bench,
                               comm=comm, role=worker.name, policy=self.policy)
        uses_tools = bool(worker.tools and self.tools)
        turn, _ = await react(self.agents, role=worker.name, member=0,
                              messages=start_messages(system, f"{self.task.rstrip()}\n\nINSTRUCTION: "
                                                              f"{WORKER_INSTRUCTION}"),
                              tools=self.tools if uses_tools else None, reads=(),
                              max_steps=self.team.worker_step_limit if uses_tools else 1)
        comm.report(f"{worker.name}.0", turn.text)
        update: dict[str, Any] = {
            "reports": [*state["reports"], (worker.name, comm.handoff(worker.name, turn.text))],
            "nodes": [*state["nodes"], turn.node_id],
            "role_outputs": {**state["role_outputs"], worker.name: turn.text}}
        if turn.last_tool_result is not None:
            update["last_tool_result"] = turn.last_tool_result
        return update

    async def manager(self, state: RoundState) -> dict[str, Any]:
        agents, manager = self.agents, self.team.manager
        system = system_prompt(editable(self.bundle, manager), answering=True, bench=self.bench, comm=self.comm,
                               extension=manager_note(self.team), role=manager, policy=self.policy)
        agents.gw.feed(manager, 0, tuple(state["nodes"]))
        await agents.call(manager, 0, start_messages(system, manager_message(self.task, state["reports"])))
        node = agents.gw.nodes(manager, 0)[-1]
        answer = next(c for c in reversed(agents.gw.calls()) if c.node_id == node).content
        self.comm.report(f"{manager}.0", answer)
        return {"answer": answer, "role_outputs": {**state["role_outputs"], manager: answer}}


def _worker_node(index: int) -> Any:
    async def run_worker(state: RoundState, config: RunnableConfig) -> dict[str, Any]:
        run: Round = episode_of(config)["round"]
        return await run.worker(index, state)

    return run_worker


async def _manager_node(state: RoundState, config: RunnableConfig) -> dict[str, Any]:
    run: Round = episode_of(config)["round"]
    return await run.manager(state)


@cache
def round_graph(names: tuple[str, ...]) -> Any:
    """worker_1 -> ... -> worker_k -> manager, compiled once per worker list."""
    graph = StateGraph(RoundState)
    for index, name in enumerate(names):
        graph.add_node(name, _worker_node(index))
    graph.add_node("manager", _manager_node)
    for a, b in zip([START, *names, "manager"], [*names, "manager", END]):
        graph.add_edge(a, b)
    return graph.compile()


async def run_report_round(agents: Team, team: CentralizedTeam, row: Row, bundle: PromptBundle, bench: Benchmark,
                           comm: CommunicationLog, policy: ContractPolicy,
                           tools: list[dict[str, Any]]) -> AgentOutput:
    names = [f"worker_{w.name}" for w in team.workers]
    run = Round(agents, team, bench.render_task(row), bundle, bench, comm, policy, tools)
    state = await round_graph(tuple(names)).ainvoke(
        {"reports": [], "nodes": [], "role_outputs": {}, "last_tool_result": None, "answer": None},
        config={"recursion_limit": len(names) + 3, "configurable": {"round": run}})
    metadata: dict[str, Any] = {"team_size": len(team.workers) + 1, "manager": team.manager,
                                "workers": [w.name for w in team.workers], "mode": "report_round",
                                "turns": len(names) + 1, "answer_source": team.manager, **comm.metadata()}
    if state["last_tool_result"] is not None:
        metadata["last_tool_result"] = state["last_tool_result"]
    if bench.vote_key(row, AgentOutput(text=state["answer"])) is None:
        metadata["no_valid_answer"] = True
    metadata["role_outputs"] = state["role_outputs"]
    return AgentOutput(text=state["answer"], selected_member=0, metadata=metadata)
