"""Single on LangGraph: one solver as a ReAct graph with the dataset's tools (protocol-v1 section 2.1).

Mirrors topologies/single.py: the same system prompt (seed prompt wrapped with the output contract), the same
model-call limit (`topologies.single.step_limit`), the benchmark's extra answer request when the final message
lacks its marker (one more model call on the same route), and for native-call answers the tool calls of the first
reply that has any, as the gateway recorded them.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

from core.benchmark import Benchmark
from core.contracts import ContractPolicy, wrap_answering_prompt
from core.framework import FrameworkContext
from core.models import AgentOutput, PromptBundle, Row
from topologies.frameworks.langgraph.agent import FRAMEWORK, episode, open_team, react, start_messages
from topologies.messages import editable, finish_output, tools_for
from topologies.single import ROLE, answer_request, step_limit


class LangGraphSingle:
    name = "single"
    framework = FRAMEWORK

    def __init__(self, team_size: int = 1, communication: str = "freeform", contract_version: int = 1) -> None:
        self.policy = ContractPolicy(contract_version)

    def roles(self, task: str, team_size: int) -> list[str]:
        return [ROLE]

    async def run(self, row: Row, bundle: PromptBundle, ctx: FrameworkContext, bench: Benchmark) -> AgentOutput:
        system = wrap_answering_prompt(editable(bundle, ROLE), bench.contract(self.policy.version),
                                       version=self.policy.version, note=self.policy.note_for(bench, True),
                                       nudge=self.policy.nudge_for(bench, ROLE, True))
        tools = tools_for(bench, row, self.name)
        limit = step_limit(bench)
        native = bench.answer_is_native_call
        asked = False
        async with open_team(ctx) as team:
            messages = start_messages(system, bench.render_task(row))
            turn, added = await react(team, role=ROLE, member=0, messages=messages, tools=tools or None, reads=(),
                                      max_steps=limit, native_call_answer=native)
            text = turn.text
            request = None if native else answer_request(bench, text)
            if request is not None:  # one more call on the solver's route, reading its last call
                team.gw.feed(ROLE, 0, (turn.node_id,))
                await team.call(ROLE, 0, [*messages, *added, HumanMessage(content=request)])
                text = episode(team, ROLE, 0, len(turn.nodes), native_call_answer=False).text
                asked = True
        meta: dict[str, Any] = {}
        if turn.last_tool_result is not None:
            meta["last_tool_result"] = turn.last_tool_result
        if turn.stop:
            meta.update({"stop": "step_limit", "step_limit": limit})
        if asked:
            meta["answer_request"] = True
        meta["role_outputs"] = {ROLE: text}
        output = AgentOutput(text=text, tool_calls=turn.tool_calls, selected_member=0, metadata=meta)
        return await finish_output(bench, row, ctx, output)
