"""Helpers the multi-agent topologies share: system prompts, OpenAI message shapes, one agent's tool loop."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.benchmark import Benchmark
from core.communication import CommunicationLog
from core.contracts import ContractPolicy, nudge_only, wrap_answering_prompt
from core.errors import ContractError
from core.models import AgentOutput, PromptBundle, Row
from core.topology import AgentContext, agent_scope

def editable(bundle: PromptBundle, role: str) -> str:
    """The bundle's prompt for `role`; a bundle without it breaks the topology's contract with the optimizer."""
    try:
        return bundle.roles[role]
    except KeyError:
        raise ContractError(f"the prompt bundle has no role {role!r} (roles: {', '.join(bundle.roles)})") from None


def system_prompt(editable: str, *, answering: bool, bench: Benchmark, comm: CommunicationLog,
                  extension: str = "", role: str = "", policy: ContractPolicy = ContractPolicy()) -> str:
    """Editable text, wrapped with the protected contract (version per `policy`, with the dataset's format note
    and, in jobs, its format nudge) for answering roles, then the topology's extension and the
    communication-format contract, all outside the editable text."""
    nudge = policy.nudge_for(bench, role, answering)
    if answering:
        text = wrap_answering_prompt(editable, bench.contract(policy.version), version=policy.version,
                                     note=policy.note_for(bench, answering), nudge=nudge)
    else:
        text = nudge_only(editable, nudge)
    if extension:
        text = f"{text}\n\n{extension.strip()}"
    return comm.system_prompt(text)


def assistant_message(content: str | None, calls: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": call_id(c), "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
                          else json.dumps(c["arguments"])}}
            for c in calls
        ]
    return message


def call_id(call: dict[str, Any]) -> str:
    return str(call.get("id") or call["name"])


def tool_message(call: dict[str, Any], content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id(call), "content": content}


def call_arguments(call: dict[str, Any]) -> dict[str, Any] | None:
    args = call.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    return args if isinstance(args, dict) else None


@dataclass(frozen=True)
class AgentTurn:
    """One agent's episode: its final text (and native-answer tool calls), the node of its last call."""

    text: str | None
    tool_calls: tuple[dict[str, Any], ...]
    node_id: str
    nodes: tuple[str, ...]
    stop: str | None = None  # "step_limit" when the loop ran out of steps
    last_tool_result: str | None = None  # the latest tool result of the episode (a scorer may read it)

    @property
    def n_calls(self) -> int:
        return len(self.nodes)


async def react(ctx: AgentContext, *, role: str, member: int, messages: list[dict[str, Any]],
                tools: Sequence[dict[str, Any]] | None, reads: Sequence[str], max_steps: int,
                native_call_answer: bool = False) -> AgentTurn:
    """Chat until a reply without tool calls (or, for native-call answers, the first reply with any), running
    tools through ctx.call_tool. Appends the exchange to `messages`. The first call reads `reads`; each later
    call reads the previous one."""
    if max_steps < 1:
        raise ValueError("an agent turn needs at least one step")
    with agent_scope(ctx, role, member):
        return await _react(ctx, role=role, member=member, messages=messages, tools=tools, reads=reads,
                            max_steps=max_steps, native_call_answer=native_call_answer)


async def _react(ctx: AgentContext, *, role: str, member: int, messages: list[dict[str, Any]],
                 tools: Sequence[dict[str, Any]] | None, reads: Sequence[str], max_steps: int,
                 native_call_answer: bool) -> AgentTurn:
    current = tuple(reads)
    nodes: list[str] = []
    text: str | None = None
    last_result: str | None = None
    for _ in range(max_steps):
        reply = await ctx.chat(role=role, member=member, messages=messages, tools=list(tools) if tools else None,
                               reads=current)
        nodes.append(reply.node_id)
        current = (reply.node_id,)
        text = reply.content
        if not reply.tool_calls:
            messages.append(assistant_message(reply.content))
            return AgentTurn(text=reply.content, tool_calls=(), node_id=reply.node_id, nodes=tuple(nodes),
                             last_tool_result=last_result)
        messages.append(assistant_message(reply.content, reply.tool_calls))
        if native_call_answer:
            return AgentTurn(text=reply.content, tool_calls=reply.tool_calls, node_id=reply.node_id,
                             nodes=tuple(nodes))
        for call in reply.tool_calls:
            result = await ctx.call_tool(role=role, member=member, node_id=reply.node_id, call=call)
            last_result = result
            messages.append(tool_message(call, result))
    return AgentTurn(text=text, tool_calls=(), node_id=nodes[-1], nodes=tuple(nodes), stop="step_limit",
                     last_tool_result=last_result)


def tools_for(bench: Benchmark, row: Row, topology: str) -> list[dict[str, Any]]:
    """The dataset's native tools, narrowed to the set it declares for this topology (`topology_tools`, e.g.
    file_write for Single/Independent, str_replace for the others); all of them when it declares none."""
    tools = bench.native_tools(row)
    allowed = bench.topology_tools.get(topology)
    if allowed is None:
        return tools
    return [t for t in tools if t.get("function", {}).get("name") in allowed]


async def finish_output(bench: Benchmark, row: Row, ctx: AgentContext, output: AgentOutput) -> AgentOutput:
    """The benchmark's last word on a rollout's output (`finish_output`, e.g. the selected member's
    `git diff HEAD`), run in the selected member's agent scope; unchanged by the default."""
    with agent_scope(ctx, "", output.selected_member or 0):
        result: AgentOutput = await bench.finish_output(row, output)
    return result
