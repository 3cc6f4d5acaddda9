"""Single: one solver agent in a ReAct loop with the dataset's tools (protocol-v1 section 2.1).

The loop ends when the model answers without a tool call or at the step limit (25; 100 for SWE). For datasets
whose answer is native tool calls (BFCL), the answer is the tool calls of the first model message that has any.
"""

from __future__ import annotations

import json
from typing import Any

from core.benchmark import Benchmark
from core.contracts import wrap_answering_prompt
from core.models import AgentOutput, PromptBundle, Row
from core.topology import AgentContext

NATIVE_CALL_ANSWER = frozenset({"bfcl"})
STEP_LIMITS = {"swe": 100}
DEFAULT_STEP_LIMIT = 25


class Single:
    name = "single"

    def roles(self, task: str, team_size: int) -> list[str]:
        return ["solver"]

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        system = wrap_answering_prompt(bundle.roles["solver"], bench.contract(1))
        messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                          {"role": "user", "content": bench.render_task(row)}]
        tools = bench.native_tools(row)
        limit = STEP_LIMITS.get(bench.name, DEFAULT_STEP_LIMIT)
        last_text: str | None = None
        last_tool_result: str | None = None
        reads: tuple[str, ...] = ()
        for _ in range(limit):
            reply = await ctx.chat(role="solver", member=0, messages=messages, tools=tools or None, reads=reads)
            reads = (reply.node_id,)
            last_text = reply.content
            if not reply.tool_calls:
                meta = {} if last_tool_result is None else {"last_tool_result": last_tool_result}
                return AgentOutput(text=reply.content, selected_member=0, metadata=meta)
            if bench.name in NATIVE_CALL_ANSWER:
                return AgentOutput(text=reply.content, tool_calls=reply.tool_calls, selected_member=0)
            messages.append(_assistant_message(reply.content, reply.tool_calls))
            for call in reply.tool_calls:
                result = await ctx.call_tool(role="solver", member=0, node_id=reply.node_id, call=call)
                last_tool_result = result
                messages.append({"role": "tool", "tool_call_id": call.get("id") or call["name"], "content": result})
        stop_meta: dict[str, Any] = {"stop": "step_limit", "step_limit": limit}
        if last_tool_result is not None:
            stop_meta["last_tool_result"] = last_tool_result
        return AgentOutput(text=last_text, selected_member=0, metadata=stop_meta)


def _assistant_message(content: str | None, calls: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": c.get("id") or c["name"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
                          else json.dumps(c["arguments"])}}
            for c in calls
        ],
    }
