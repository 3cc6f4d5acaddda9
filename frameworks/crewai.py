"""Sequential on CrewAI (protocol-v1 section 2.3, registry key `sequential_crewai`).

One crewai `Agent` per stage, whose backstory is the system prompt the native sequential topology builds for that
stage (the bundle's editable prompt; the last stage's wrapped with the output contract); one `Task` per stage whose
description is the stage's task template with the rendered task, and whose `context` lists every earlier task, so
CrewAI itself appends the earlier stages' outputs; `Process.sequential`. Every agent's model is a CrewAI `LLM`
(`openai/<model>`) on its own route of the engine's recording gateway (retries off), so each call is a recorded,
seeded turn of that stage's role; the first call of stage k reads the last node of every earlier stage.
Stages with tools get the dataset's tools as CrewAI tools carrying the dataset's JSON schema; CrewAI runs them in
its worker thread and they execute through the gateway (`call_tool_blocking`).

What CrewAI adds to the prompts (its role/goal framing, the "expected criteria" line, the context block, its
tool-use instructions) is its framework behaviour and is recorded as sent. The answer and each stage's output are
read from the gateway's record of the model's replies, not from CrewAI's objects.

CrewAI contacts nothing but the gateway: telemetry, tracking and tracing are switched off below before crewai is
imported (and each Crew is built with `tracing=False`), memory, planning, caching and delegation are off, and
the native OpenAI provider is used (no LiteLLM, no model-cost lookups).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from typing import Any, ClassVar

for _name, _value in (("CREWAI_DISABLE_TELEMETRY", "true"), ("CREWAI_DISABLE_TRACKING", "true"),
                      ("OTEL_SDK_DISABLED", "true"), ("CREWAI_TRACING_ENABLED", "false")):
    os.environ[_name] = _value

import anyio  # noqa: E402
from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402
from pydantic import BaseModel, ConfigDict, PrivateAttr  # noqa: E402

from core.benchmark import Benchmark, rerenders_handoffs  # noqa: E402
from core.communication import CommunicationLog  # noqa: E402
from core.contracts import ContractPolicy  # noqa: E402
from core.framework import AgentLink, FrameworkContext, GatewaySession  # noqa: E402
from core.models import AgentOutput, PromptBundle, Row  # noqa: E402
from topologies.messages import editable, finish_output, system_prompt, tools_for  # noqa: E402
from topologies.teams import Stage, check_team_size, team_spec  # noqa: E402

FRAMEWORK = "crewai"
STAGE_GOAL = "Carry out the {role} stage of the team's task."
STAGE_OUTPUT = "The complete output of the {role} stage, for the stages after it."
FINAL_OUTPUT = "The team's final answer, in the format your instructions require."


class _Arguments(BaseModel):
    """Arguments of a dataset tool: any object (the benchmark's tool implementation checks them)."""

    model_config = ConfigDict(extra="allow")
    schema_of_tool: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.schema_of_tool)


def arguments_model(name: str, parameters: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model whose JSON schema is the dataset tool's own `parameters` schema."""
    return type(f"{name}_arguments", (_Arguments,), {"schema_of_tool": copy.deepcopy(parameters),
                                                   "__module__": __name__})


class GatewayTool(BaseTool):
    """A dataset tool as a CrewAI tool: runs in CrewAI's thread, executes through the recording gateway."""

    _gateway: Any = PrivateAttr()
    _role: str = PrivateAttr()

    def bind(self, gateway: GatewaySession, role: str) -> "GatewayTool":
        self._gateway, self._role = gateway, role
        return self

    def _run(self, *args: Any, **kwargs: Any) -> str:
        result: str = self._gateway.call_tool_blocking(self._role, 0, self.name, kwargs, None)
        return result


def crew_tools(gateway: GatewaySession, role: str, schemas: Sequence[dict[str, Any]]) -> list[BaseTool]:
    tools: list[BaseTool] = []
    for schema in schemas:
        function = schema["function"]
        name = function["name"]
        tool = GatewayTool(name=name, description=function.get("description") or name,
                           args_schema=arguments_model(name, function.get("parameters") or {"type": "object"}),
                           cache_function=lambda *_: False)
        tools.append(tool.bind(gateway, role))
    return tools


def crew_llm(link: AgentLink) -> LLM:
    """CrewAI's native OpenAI provider on the agent's gateway route; CrewAI's own retries off."""
    return LLM(model=f"openai/{link.model}", base_url=link.base_url, api_key=link.api_key, max_retries=0)


def last_nodes(gateway: GatewaySession, roles: Sequence[str]) -> tuple[str, ...]:
    """The last recorded node of each earlier stage (what stage k's first call reads)."""
    return tuple(nodes[-1] for nodes in (gateway.nodes(r, 0) for r in roles) if nodes)


def final_texts(gateway: GatewaySession, roles: Sequence[str]) -> dict[str, str | None]:
    """Each stage's output: the content of its role's last recorded model call (None when it made none)."""
    texts: dict[str, str | None] = {role: None for role in roles}
    for call in gateway.calls():
        if call.role in texts and call.member == 0:
            texts[call.role] = call.content
    return texts


class CrewSequential:
    name = "sequential"
    framework = FRAMEWORK

    def __init__(self, team_size: int = 4, communication: str = "freeform", contract_version: int = 1):
        self.team_size = check_team_size(self.name, team_size)
        self.communication = communication
        self.policy = ContractPolicy(contract_version)
        CommunicationLog(communication)

    def roles(self, task: str, team_size: int) -> list[str]:
        return [stage.role for stage in team_spec(task).stages(team_size)]

    def _crew(self, gw: GatewaySession, row: Row, bundle: PromptBundle, bench: Benchmark,
              comm: CommunicationLog) -> Crew:
        """The crew for one rollout attempt (every gateway link created here, on the event loop)."""
        spec = team_spec(bench.name)
        stages: list[Stage] = spec.stages(self.team_size)
        task_text = bench.render_task(row)
        native_tools = [] if bench.answer_is_native_call else tools_for(bench, row, self.name)
        limit = spec.stage_step_limit()
        tasks: list[Task] = []
        agents: list[Agent] = []
        for index, stage in enumerate(stages):
            last = index == len(stages) - 1
            earlier = [s.role for s in stages[:index]]
            link = gw.agent(stage.role, 0, reads=lambda earlier=earlier: last_nodes(gw, earlier))
            tools = crew_tools(gw, stage.role, native_tools) if stage.tools and native_tools else []
            agent = Agent(role=stage.role, goal=STAGE_GOAL.format(role=stage.role),
                          backstory=system_prompt(editable(bundle, stage.role), answering=last, bench=bench,
                                                  comm=comm, role=stage.role, policy=self.policy),
                          llm=crew_llm(link), tools=tools, allow_delegation=False, verbose=False, cache=False,
                          max_iter=limit if tools else 1, max_retry_limit=0, respect_context_window=False)
            expected = FINAL_OUTPUT if last else STAGE_OUTPUT.format(role=stage.role)
            tasks.append(Task(description=stage.user_message(task_text), expected_output=expected, agent=agent,
                              context=list(tasks)))
            agents.append(agent)
        return Crew(agents=agents, tasks=tasks, process=Process.sequential, verbose=False, memory=False,
                    cache=False, planning=False, tracing=False)

    async def run(self, row: Row, bundle: PromptBundle, ctx: FrameworkContext, bench: Benchmark) -> AgentOutput:
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        stages = [s.role for s in team_spec(bench.name).stages(self.team_size)]
        async with ctx.gateway(FRAMEWORK) as gw:
            crew = self._crew(gw, row, bundle, bench, comm)
            await anyio.to_thread.run_sync(crew.kickoff)
            outputs = final_texts(gw, stages)
            calls = gw.calls()
        for role in stages:
            comm.report(f"{role}.0", outputs[role])
        metadata: dict[str, Any] = {"team_size": self.team_size, "stages": stages, "framework": FRAMEWORK,
                                    **comm.metadata(), "role_outputs": outputs,
                                    "calls_per_stage": {r: sum(1 for c in calls if c.role == r) for r in stages}}
        output = AgentOutput(text=outputs[stages[-1]], selected_member=0, metadata=metadata)
        return await finish_output(bench, row, ctx, output)


RUNTIMES: dict[str, type] = {"sequential": CrewSequential}
