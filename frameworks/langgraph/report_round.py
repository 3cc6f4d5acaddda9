"""Centralized for team specs in mode `report_round`, on LangGraph (protocol-v1 section 2.4): a StateGraph
worker_1 -> ... -> worker_k -> manager. Each worker runs once on the task (a ReAct graph when it has tools); the
manager reads every worker's re-rendered report in one model call and its message is the answer. Mirrors
topologies/report_round.py (its instruction, manager note and message layout are reused).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from core.benchmark import Benchmark
from core.communication import CommunicationLog
from core.contracts import ContractPolicy
from core.models import AgentOutput, PromptBundle, Row
from frameworks.langgraph.agent import Team, react, start_messages
from topologies.messages import editable, system_prompt
from topologies.report_round import WORKER_INSTRUCTION, manager_message, manager_note
from topologies.teams import CentralizedTeam, Worker


class RoundState(TypedDict):
    reports: list[tuple[str, str]]
    nodes: list[str]
    role_outputs: dict[str, str | None]
    last_tool_result: str | None
    answer: str | None


def _worker_node(agents: Team, worker: Worker, task: str, bundle: PromptBundle, bench: Benchmark,
                 comm: CommunicationLog, policy: ContractPolicy, tools: list[dict[str, Any]], limit: int) -> Any:
    system = system_prompt(editable(bundle, worker.name), answering=worker.answers, bench=bench, comm=comm,
                           role=worker.name, policy=policy)

    async def run_worker(state: RoundState) -> dict[str, Any]:
        turn, _ = await react(agents, role=worker.name, member=0,
                              messages=start_messages(system, f"{task.rstrip()}\n\nINSTRUCTION: {WORKER_INSTRUCTION}"),
                              tools=tools if worker.tools and tools else None, reads=(),
                              max_steps=limit if worker.tools and tools else 1)
        comm.report(f"{worker.name}.0", turn.text)
        update: dict[str, Any] = {
            "reports": [*state["reports"], (worker.name, comm.handoff(worker.name, turn.text))],
            "nodes": [*state["nodes"], turn.node_id],
            "role_outputs": {**state["role_outputs"], worker.name: turn.text}}
        if turn.last_tool_result is not None:
            update["last_tool_result"] = turn.last_tool_result
        return update

    return run_worker


async def run_report_round(agents: Team, team: CentralizedTeam, row: Row, bundle: PromptBundle, bench: Benchmark,
                           comm: CommunicationLog, policy: ContractPolicy,
                           tools: list[dict[str, Any]]) -> AgentOutput:
    task = bench.render_task(row)
    system = system_prompt(editable(bundle, team.manager), answering=True, bench=bench, comm=comm,
                           extension=manager_note(team), role=team.manager, policy=policy)

    async def manager(state: RoundState) -> dict[str, Any]:
        agents.gw.feed(team.manager, 0, tuple(state["nodes"]))
        await agents.model(team.manager, 0).ainvoke(start_messages(system, manager_message(task, state["reports"])))
        node = agents.gw.nodes(team.manager, 0)[-1]
        answer = next(c for c in reversed(agents.gw.calls()) if c.node_id == node).content
        comm.report(f"{team.manager}.0", answer)
        return {"answer": answer, "role_outputs": {**state["role_outputs"], team.manager: answer}}

    graph = StateGraph(RoundState)
    names = [f"worker_{w.name}" for w in team.workers]
    for worker, name in zip(team.workers, names):
        graph.add_node(name, _worker_node(agents, worker, task, bundle, bench, comm, policy, tools,
                                          team.worker_step_limit))
    graph.add_node("manager", manager)
    for a, b in zip([START, *names, "manager"], [*names, "manager", END]):
        graph.add_edge(a, b)
    state = await graph.compile().ainvoke({"reports": [], "nodes": [], "role_outputs": {}, "last_tool_result": None,
                                           "answer": None}, config={"recursion_limit": len(names) + 3})
    metadata: dict[str, Any] = {"team_size": len(team.workers) + 1, "manager": team.manager,
                                "workers": [w.name for w in team.workers], "mode": "report_round",
                                "turns": len(names) + 1, "answer_source": team.manager, **comm.metadata()}
    if state["last_tool_result"] is not None:
        metadata["last_tool_result"] = state["last_tool_result"]
    if bench.vote_key(row, AgentOutput(text=state["answer"])) is None:
        metadata["no_valid_answer"] = True
    metadata["role_outputs"] = state["role_outputs"]
    return AgentOutput(text=state["answer"], selected_member=0, metadata=metadata)
