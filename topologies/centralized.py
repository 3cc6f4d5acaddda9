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
A team spec in mode `report_round` has no delegation loop: each worker runs once, then the
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
from core.coalition import CoalitionGame
from core.models import AgentOutput, PromptBundle, Row
from core.topology import AgentContext, ChatReply, agent_scope
from topologies.coalition import CENTRALIZED_RULE, acknowledge, centralized_team, mask_of
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
    member_masks = True  # honours coalition masks (topologies/coalition.py)

    def __init__(self, team_size: int = 4, communication: str = "freeform", contract_version: int = 1):
        self.team_size = check_team_size(self.name, team_size)
        self.communication = communication
        self.policy = ContractPolicy(contract_version)
        CommunicationLog(communication)

    def roles(self, task: str, team_size: int) -> list[str]:
        team = team_spec(task).centralized(team_size)
        return [team.manager, *(w.name for w in team.workers)]

    def coalition_game(self, task: str, team_size: int) -> CoalitionGame:
        team = team_spec(task).centralized(team_size)
        return CoalitionGame(players=tuple(w.name for w in team.workers), anchor=team.manager, empty_runs=True)

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        mask = mask_of(ctx)
        team = centralized_team(team_spec(bench.name).centralized(self.team_size), mask)
        present = (team.manager, *(w.name for w in team.workers))
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        native = [] if bench.answer_is_native_call else tools_for(bench, row, self.name)
        if team.mode == "report_round":  # section 2.4: a report round, no delegation loop
            output, outputs = await report_round(team, row, bundle, ctx, bench, comm, self.policy, native)
            output = output.model_copy(update={"metadata": {**output.metadata, "role_outputs": outputs}})
            return acknowledge(await finish_output(bench, row, ctx, output), mask, present, CENTRALIZED_RULE)
        loop = _DelegationLoop(self, row, bundle, ctx, bench, team, comm, native)
        while loop.turns < team.max_turns:
            if await loop.manager_turn():
                break
        loop.role_outputs[team.manager] = strip_terminate(loop.manager_text)
        output = self._output(row, bench, team, strip_terminate(loop.manager_text), loop.turns, loop.stop,
                              loop.delegations, loop.invalid, comm)
        output = output.model_copy(update={"metadata": {**output.metadata, "role_outputs": loop.role_outputs}})
        if loop.last_tool_result is not None:
            output = output.model_copy(update={"metadata": {**output.metadata,
                                                            "last_tool_result": loop.last_tool_result}})
        return acknowledge(await finish_output(bench, row, ctx, output), mask, present, CENTRALIZED_RULE)

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


class _DelegationLoop:
    """The state of one rollout's manager/worker loop; `manager_turn` runs one manager turn and whatever worker
    turn it delegates."""

    def __init__(self, topology: Centralized, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark,
                 team: CentralizedTeam, comm: CommunicationLog, native: list[dict[str, Any]]) -> None:
        self.policy, self.bundle, self.ctx, self.bench, self.team, self.comm = (
            topology.policy, bundle, ctx, bench, team, comm)
        self.native = native
        self.workers = {w.name: w for w in team.workers}
        self.task = bench.render_task(row)
        self.manager_tools = [delegate_tool(w) for w in team.workers] + (native if team.manager_tools else [])
        manager_system = system_prompt(editable(bundle, team.manager), answering=True, bench=bench, comm=comm,
                                       extension=manager_extension(team), role=team.manager, policy=self.policy)
        self.conversation: list[dict[str, Any]] = [
            {"role": "system", "content": manager_system},
            {"role": "user", "content": self.task},
        ]
        self.shared: list[tuple[str, str]] = []  # what workers see, besides the task
        self.shared_nodes: list[str] = []
        self.delegations: list[str] = []
        self.invalid: list[dict[str, Any]] = []
        self.role_outputs: dict[str, str | None] = {}  # each agent's latest message (the manager's: its final one)
        self.turns, self.stop = 0, "turn_cap"
        self.reads: tuple[str, ...] = ()
        self.manager_text: str | None = None
        self.last_tool_result: str | None = None

    async def manager_turn(self) -> bool:
        """One manager turn (and the worker turn it delegates); True when the loop ends."""
        manager, comm = self.team.manager, self.comm
        reply = await self.ctx.chat(role=manager, member=0, messages=self.conversation, tools=self.manager_tools,
                                    reads=self.reads)
        self.turns += 1
        self.manager_text = reply.content
        self.conversation.append(assistant_message(reply.content, reply.tool_calls))
        final = strip_terminate(reply.content)
        if reply.content and reply.content.strip():
            self.shared.append(("manager", comm.handoff("manager", final)))
            self.shared_nodes.append(reply.node_id)
        if TERMINATE in (reply.content or "") or not reply.tool_calls:
            comm.report(f"{manager}.0", final)
        if TERMINATE in (reply.content or ""):
            self.stop = "terminate"
            return True
        if not reply.tool_calls:
            self.conversation.append({"role": "user", "content": NUDGE})
            self.reads = (reply.node_id,)
            return False
        chosen, results = await self._route_calls(reply)
        self.reads = (reply.node_id,)
        ended = False
        if chosen is not None and self.turns >= self.team.max_turns:
            filled = "error: the turn cap was reached before the worker could run."
            results = [(c, filled if r is None else r) for c, r in results]
            ended = True
        elif chosen is not None:
            rendered, worker_node = await self._delegate(reply, *chosen)
            results = [(c, rendered if r is None else r) for c, r in results]
            self.reads = (reply.node_id, worker_node)
        for call, result in results:
            self.conversation.append(tool_message(call, result or ""))
        return ended

    async def _route_calls(self, reply: ChatReply) -> tuple[tuple[Worker, dict[str, Any]] | None,
                                                             list[tuple[dict[str, Any], str | None]]]:
        """The manager's tool calls: the first valid delegation is chosen (its result comes later), invalid or
        extra delegations get an error result, other tools run now."""
        manager = self.team.manager
        chosen: tuple[Worker, dict[str, Any]] | None = None
        results: list[tuple[dict[str, Any], str | None]] = []
        for call in reply.tool_calls:
            name = str(call.get("name", ""))
            result: str | None = None
            if name.startswith(DELEGATE_PREFIX):
                target = name[len(DELEGATE_PREFIX):]
                if target not in self.workers:
                    self.invalid.append({"manager_turn": reply.turn, "tool": name})
                    result = (f"error: there is no worker named {target!r}; your workers are: "
                              f"{', '.join(self.workers)}.")
                elif chosen is not None:
                    result = (f"error: one worker at a time; {chosen[0].name} takes this turn. Delegate to "
                              f"{target} afterwards if still needed.")
                else:
                    chosen = (self.workers[target], call)
            else:
                with agent_scope(self.ctx, manager, 0):
                    result = await self.ctx.call_tool(role=manager, member=0, node_id=reply.node_id, call=call)
                self.last_tool_result = result
            results.append((call, result))
        return chosen, results

    async def _delegate(self, reply: ChatReply, worker: Worker, call: dict[str, Any]) -> tuple[str, str]:
        """Run the delegated worker's turn; its report as the manager reads it, and the worker's last node."""
        args = call_arguments(call)
        instruction = str(args.get("task", "")) if args else str(call.get("arguments", ""))
        self.delegations.append(worker.name)
        self.shared_nodes.append(reply.node_id)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(editable(self.bundle, worker.name),
                                                        answering=worker.answers, bench=self.bench, comm=self.comm,
                                                        role=worker.name, policy=self.policy)},
            {"role": "user", "content": worker_view(self.task, self.shared, worker.name, instruction)},
        ]
        turn = await react(self.ctx, role=worker.name, member=0, messages=messages,
                           tools=self.native if worker.tools else None, reads=tuple(dict.fromkeys(self.shared_nodes)),
                           max_steps=min(self.team.worker_step_limit, self.team.max_turns - self.turns))
        self.turns += turn.n_calls
        if turn.last_tool_result is not None:
            self.last_tool_result = turn.last_tool_result
        self.comm.report(f"{worker.name}.0", turn.text)
        self.role_outputs[worker.name] = turn.text
        rendered = self.comm.handoff(worker.name, turn.text)
        self.shared.append((f"manager -> {worker.name}", instruction))
        self.shared.append((worker.name, rendered))
        self.shared_nodes.append(turn.node_id)
        return rendered, turn.node_id
