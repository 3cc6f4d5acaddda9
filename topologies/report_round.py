"""Centralized for team specs in mode `report_round` (protocol-v1 section 2.4): no delegation loop - each worker
runs once, in team order, on the task; then the manager reads the workers' reports and answers in one call.

Workers with tools run their tool loop; answer-producing workers carry the output contract, as in the delegation
loop. The manager's single message is the answer (never a worker's). Reports are re-rendered into the
communication format before the manager reads them; the manager reads every worker node.
"""

from __future__ import annotations

from typing import Any

from core.benchmark import Benchmark
from core.communication import CommunicationLog
from core.contracts import ContractPolicy
from core.models import AgentOutput, PromptBundle, Row
from core.topology import AgentContext
from topologies.messages import editable, react, system_prompt
from topologies.teams import CentralizedTeam

WORKER_INSTRUCTION = "Do your part of this task once and write your report for the manager."


def manager_note(team: CentralizedTeam) -> str:
    names = ", ".join(w.name for w in team.workers)
    return (f"Your workers ({names}) have each worked on the task once; their reports follow the task. Read them "
            "and give the final answer yourself in this one message.")


def manager_message(task: str, reports: list[tuple[str, str]]) -> str:
    blocks = [task.rstrip(), "WORKER REPORTS:"]
    blocks += [f"[{name}]:\n{text}" for name, text in reports]
    return "\n\n".join(blocks)


async def report_round(team: CentralizedTeam, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark,
                       comm: CommunicationLog, policy: ContractPolicy,
                       tools: list[dict[str, Any]]) -> tuple[AgentOutput, dict[str, str | None]]:
    task = bench.render_task(row)
    reports: list[tuple[str, str]] = []
    nodes: list[str] = []
    role_outputs: dict[str, str | None] = {}
    last_tool_result: str | None = None
    for worker in team.workers:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(editable(bundle, worker.name), answering=worker.answers,
                                                        bench=bench, comm=comm, role=worker.name, policy=policy)},
            {"role": "user", "content": f"{task.rstrip()}\n\nINSTRUCTION: {WORKER_INSTRUCTION}"},
        ]
        turn = await react(ctx, role=worker.name, member=0, messages=messages,
                           tools=tools if worker.tools and tools else None, reads=(),
                           max_steps=team.worker_step_limit if worker.tools and tools else 1)
        comm.report(f"{worker.name}.0", turn.text)
        role_outputs[worker.name] = turn.text
        reports.append((worker.name, comm.handoff(worker.name, turn.text)))
        nodes.append(turn.node_id)
        if turn.last_tool_result is not None:
            last_tool_result = turn.last_tool_result
    system = system_prompt(editable(bundle, team.manager), answering=True, bench=bench, comm=comm,
                           extension=manager_note(team), role=team.manager, policy=policy)
    reply = await ctx.chat(role=team.manager, member=0, reads=tuple(nodes),
                           messages=[{"role": "system", "content": system},
                                     {"role": "user", "content": manager_message(task, reports)}])
    comm.report(f"{team.manager}.0", reply.content)
    role_outputs[team.manager] = reply.content
    metadata: dict[str, Any] = {"team_size": len(team.workers) + 1, "manager": team.manager,
                                "workers": [w.name for w in team.workers], "mode": "report_round",
                                "turns": len(nodes) + 1, "answer_source": team.manager, **comm.metadata()}
    if last_tool_result is not None:
        metadata["last_tool_result"] = last_tool_result
    if bench.vote_key(row, AgentOutput(text=reply.content)) is None:
        metadata["no_valid_answer"] = True
    return AgentOutput(text=reply.content, selected_member=0, metadata=metadata), role_outputs
