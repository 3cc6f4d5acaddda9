"""Single: one solver agent in a ReAct loop with the dataset's tools (protocol-v1 section 2.1).

The loop ends when the model answers without a tool call or at its limit. The protocol's LangGraph ReAct agent has
a recursion limit of graph steps (`Benchmark.single_recursion_limit`, 25 unless the dataset declares more), and
every model call but the last is followed by a tool step, so it allows ceil(limit / 2) model calls: 13 for 25 -
the same reading the team specs use for the multi-agent recursion limits (20 -> 10 calls). Plain loops declare
model calls directly (`single_step_limit`). A benchmark that declares an `answer_request` (e.g. "If no `<answer>`
tag, one extra short call asks for it") gets exactly one more request when the final message lacks its
`answer_marker`. For datasets whose answer is native tool calls (`answer_is_native_call`), the answer is the tool
calls of the first model message that has any.
"""

from __future__ import annotations

from typing import Any

from core.benchmark import Benchmark
from core.contracts import ContractPolicy, wrap_answering_prompt
from core.models import AgentOutput, PromptBundle, Row
from core.topology import AgentContext
from topologies.messages import finish_output, react, tools_for

ROLE = "solver"


def step_limit(bench: Benchmark) -> int:
    """Model calls the Single loop may make for this dataset."""
    if bench.single_step_limit is not None:
        return bench.single_step_limit
    return (bench.single_recursion_limit + 1) // 2


def answer_request(bench: Benchmark, text: str | None) -> str | None:
    """The extra request's text when the benchmark asks for one and `text` lacks the answer marker."""
    request, marker = bench.answer_request, bench.answer_marker
    if not request or not marker or marker in (text or ""):
        return None
    return request


class Single:
    name = "single"

    def __init__(self, contract_version: int = 1) -> None:
        self.policy = ContractPolicy(contract_version)

    def roles(self, task: str, team_size: int) -> list[str]:
        return [ROLE]

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        system = wrap_answering_prompt(bundle.roles[ROLE], bench.contract(self.policy.version),
                                       version=self.policy.version, note=self.policy.note_for(bench, True),
                                       nudge=self.policy.nudge_for(bench, ROLE, True))
        messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                          {"role": "user", "content": bench.render_task(row)}]
        tools = tools_for(bench, row, self.name)
        limit = step_limit(bench)
        native = bench.answer_is_native_call
        turn = await react(ctx, role=ROLE, member=0, messages=messages, tools=tools or None, reads=(),
                           max_steps=limit, native_call_answer=native)
        meta: dict[str, Any] = {}
        if turn.last_tool_result is not None:
            meta["last_tool_result"] = turn.last_tool_result
        if turn.stop:
            meta.update({"stop": "step_limit", "step_limit": limit})
        text = turn.text
        request = None if native else answer_request(bench, text)
        if request is not None:
            messages.append({"role": "user", "content": request})
            reply = await ctx.chat(role=ROLE, member=0, messages=messages, tools=None, reads=(turn.node_id,))
            text = reply.content
            meta["answer_request"] = True
        meta["role_outputs"] = {ROLE: text}
        output = AgentOutput(text=text, tool_calls=turn.tool_calls, selected_member=0, metadata=meta)
        return await finish_output(bench, row, ctx, output)
