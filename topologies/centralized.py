"""Centralized: a manager delegating to n-1 workers, hub and spoke (protocol-v1 section 2.4).

The manager's prompt is extended, outside its editable text, with its workers' names and "end your final
message with TERMINATE"; it is offered one `delegate_to_<worker>` tool per worker (plus the dataset's tools
where the team spec allows). Control alternates: manager turn -> at most one delegated worker turn -> manager.
A worker sees the shared conversation (task, the manager's messages and instructions, earlier workers' reports)
and its report returns to the manager as the delegate call's tool result. The run ends when a manager message
contains TERMINATE or when the turn cap (every agent chat call counts) is reached; a manager message with neither
a tool call nor TERMINATE gets a short nudge and the manager goes again.

The manager and the answer-producing workers carry the output contract. The answer is the manager's final
message (TERMINATE stripped) and nothing else (section 2): when it holds no answer, the rollout is a semantic
failure (`no_valid_answer`); a worker's answer is never promoted in its place.
ToolHop and API-Bank (team spec mode `report_round`) have no delegation loop: each worker runs once, then the
manager reads the reports and answers (topologies/report_round.py).
A delegate call naming a worker that does not exist is answered with an error tool result and noted in the
output metadata (`invalid_delegations`); it never crashes the rollout.
"""

from __future__ import annotations

import re
from typing import Any

from core.benchmark import Benchmark, rerenders_handoffs
from core.communication import CommunicationLog
from core.contracts import ContractPolicy
from core.models import AgentOutput, PromptBundle, Row
from core.topology import AgentContext, agent_scope
from topologies.messages import (assistant_message, call_arguments, editable, finish_output,
                                 react, system_prompt, tool_message, tools_for)
from topologies.report_round import report_round
from topologies.teams import CentralizedTeam, Worker, check_team_size, team_spec

TERMINATE = "TERMINATE"
DELEGATE_PREFIX = "delegate_to_"
NUDGE = ("Continue: delegate the next step to one worker with its delegate_to_<worker> tool, or give the final "
         f"answer and end your message with {TERMINATE}.")
_TRAILING_TERMINATE = re.compile(rf"(?:\s*\b{TERMINATE}\b[.!]?)+\s*$")


def delegate_tool(worker: Worker) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": f"{DELEGATE_PREFIX}{worker.name}",
        "description": worker.description,
        "parameters": {"type": "object",
                       "properties": {"task": {"type": "string",
                                               "description": f"What {worker.name} should do this turn."}},
                       "required": ["task"]},
    }}


def manager_extension(team: CentralizedTeam) -> str:
    names = ", ".join(w.name for w in team.workers)
    return (f"Your workers: {names}. Delegate to one worker at a time by calling its {DELEGATE_PREFIX}<worker> "
            "tool with the task it should do; the worker's report comes back to you as the tool result. "
            f"When the task is complete, give the final answer and end your final message with {TERMINATE}.")


def strip_terminate(text: str | None) -> str | None:
    if text is None:
        return None
    return _TRAILING_TERMINATE.sub("", text)


def worker_view(task: str, shared: list[tuple[str, str]], worker: str, instruction: str) -> str:
    blocks = [task.rstrip()]
    if shared:
        blocks.append("SHARED CONVERSATION SO FAR:\n" + "\n\n".join(f"[{who}]:\n{text}" for who, text in shared))
    blocks.append(f"INSTRUCTION FROM THE MANAGER TO {worker}:\n{instruction}")
    return "\n\n".join(blocks)


class Centralized:
    name = "centralized"

    def __init__(self, team_size: int = 4, communication: str = "freeform", contract_version: int = 1):
        self.team_size = check_team_size(self.name, team_size)
        self.communication = communication
        self.policy = ContractPolicy(contract_version)
        CommunicationLog(communication)

    def roles(self, task: str, team_size: int) -> list[str]:
        team = team_spec(task).centralized(team_size)
        return [team.manager, *(w.name for w in team.workers)]

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        team = team_spec(bench.name).centralized(self.team_size)
        workers = {w.name: w for w in team.workers}
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        task = bench.render_task(row)
        native = [] if bench.answer_is_native_call else tools_for(bench, row, self.name)
        if team.mode == "report_round":  # section 2.4: ToolHop / API-Bank have no delegation loop
            output, outputs = await report_round(team, row, bundle, ctx, bench, comm, self.policy, native)
            output = output.model_copy(update={"metadata": {**output.metadata, "role_outputs": outputs}})
            return await finish_output(bench, row, ctx, output)
        manager_tools = [delegate_tool(w) for w in team.workers] + (native if team.manager_tools else [])
        manager = team.manager
        manager_system = system_prompt(editable(bundle, manager), answering=True, bench=bench, comm=comm,
                                       extension=manager_extension(team), role=manager, policy=self.policy)
        conversation: list[dict[str, Any]] = [
            {"role": "system", "content": manager_system},
            {"role": "user", "content": task},
        ]
        shared: list[tuple[str, str]] = []  # what workers see, besides the task
        shared_nodes: list[str] = []
        delegations: list[str] = []
        invalid: list[dict[str, Any]] = []
        role_outputs: dict[str, str | None] = {}  # each agent's latest message (the manager's: its final one)
        turns, stop = 0, "turn_cap"
        reads: tuple[str, ...] = ()
        manager_text: str | None = None
        last_tool_result: str | None = None
        while turns < team.max_turns:
            reply = await ctx.chat(role=manager, member=0, messages=conversation, tools=manager_tools, reads=reads)
            turns += 1
            manager_text = reply.content
            conversation.append(assistant_message(reply.content, reply.tool_calls))
            final = strip_terminate(reply.content)
            if reply.content and reply.content.strip():
                shared.append(("manager", comm.handoff("manager", final)))
                shared_nodes.append(reply.node_id)
            if TERMINATE in (reply.content or "") or not reply.tool_calls:
                comm.report(f"{manager}.0", final)
            if TERMINATE in (reply.content or ""):
                stop = "terminate"
                break
            if not reply.tool_calls:
                conversation.append({"role": "user", "content": NUDGE})
                reads = (reply.node_id,)
                continue
            chosen: tuple[Worker, dict[str, Any]] | None = None
            results: list[tuple[dict[str, Any], str | None]] = []
            for call in reply.tool_calls:
                name = str(call.get("name", ""))
                result: str | None = None
                if name.startswith(DELEGATE_PREFIX):
                    target = name[len(DELEGATE_PREFIX):]
                    if target not in workers:
                        invalid.append({"manager_turn": reply.turn, "tool": name})
                        result = (f"error: there is no worker named {target!r}; your workers are: "
                                  f"{', '.join(workers)}.")
                    elif chosen is not None:
                        result = (f"error: one worker at a time; {chosen[0].name} takes this turn. Delegate to "
                                  f"{target} afterwards if still needed.")
                    else:
                        chosen = (workers[target], call)
                else:
                    with agent_scope(ctx, manager, 0):
                        result = await ctx.call_tool(role=manager, member=0, node_id=reply.node_id, call=call)
                    last_tool_result = result
                results.append((call, result))
            reads = (reply.node_id,)
            if chosen is not None:
                if turns >= team.max_turns:
                    filled = "error: the turn cap was reached before the worker could run."
                    results = [(c, filled if r is None else r) for c, r in results]
                    for call, result in results:
                        conversation.append(tool_message(call, result or ""))
                    break
                worker, call = chosen
                args = call_arguments(call)
                instruction = str(args.get("task", "")) if args else str(call.get("arguments", ""))
                delegations.append(worker.name)
                shared_nodes.append(reply.node_id)
                messages: list[dict[str, Any]] = [
                    {"role": "system", "content": system_prompt(editable(bundle, worker.name),
                                                                answering=worker.answers, bench=bench, comm=comm,
                                                                role=worker.name, policy=self.policy)},
                    {"role": "user", "content": worker_view(task, shared, worker.name, instruction)},
                ]
                turn = await react(ctx, role=worker.name, member=0, messages=messages,
                                   tools=native if worker.tools else None, reads=tuple(dict.fromkeys(shared_nodes)),
                                   max_steps=min(team.worker_step_limit, team.max_turns - turns))
                turns += turn.n_calls
                if turn.last_tool_result is not None:
                    last_tool_result = turn.last_tool_result
                comm.report(f"{worker.name}.0", turn.text)
                role_outputs[worker.name] = turn.text
                rendered = comm.handoff(worker.name, turn.text)
                shared.append((f"manager -> {worker.name}", instruction))
                shared.append((worker.name, rendered))
                shared_nodes.append(turn.node_id)
                results = [(c, rendered if r is None else r) for c, r in results]
                reads = (reply.node_id, turn.node_id)
            for call, result in results:
                conversation.append(tool_message(call, result or ""))
        role_outputs[manager] = strip_terminate(manager_text)
        output = self._output(row, bench, team, strip_terminate(manager_text), turns, stop, delegations,
                              invalid, comm)
        output = output.model_copy(update={"metadata": {**output.metadata, "role_outputs": role_outputs}})
        if last_tool_result is not None:
            output = output.model_copy(update={"metadata": {**output.metadata, "last_tool_result": last_tool_result}})
        return await finish_output(bench, row, ctx, output)

    def _output(self, row: Row, bench: Benchmark, team: CentralizedTeam, final: str | None, turns: int,
                stop: str, delegations: list[str], invalid: list[dict[str, Any]],
                comm: CommunicationLog) -> AgentOutput:
        text, source = final, team.manager
        metadata: dict[str, Any] = {
            "team_size": self.team_size, "manager": team.manager, "workers": [w.name for w in team.workers],
            "turns": turns, "max_turns": team.max_turns, "stop": stop, "delegations": delegations,
            "answer_source": source, **comm.metadata(),
        }
        if stop == "turn_cap":
            metadata["stop_reason"] = f"turn cap of {team.max_turns} reached without {TERMINATE}"
        if invalid:
            metadata["invalid_delegations"] = invalid
        if bench.vote_key(row, AgentOutput(text=text)) is None:
            metadata["no_valid_answer"] = True
        return AgentOutput(text=text, selected_member=0, metadata=metadata)
