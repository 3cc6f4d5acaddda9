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
import json
import logging
import os
from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar

for _name, _value in (("CREWAI_DISABLE_TELEMETRY", "true"), ("CREWAI_DISABLE_TRACKING", "true"),
                      ("OTEL_SDK_DISABLED", "true"), ("CREWAI_TRACING_ENABLED", "false")):
    os.environ[_name] = _value

import anyio  # noqa: E402
import anyio.from_thread  # noqa: E402
import anyio.lowlevel  # noqa: E402
from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402
from crewai.agents.agent_builder.base_agent import BaseAgent  # noqa: E402
from crewai.events import event_context  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402
from crewai.utilities.task_output_storage_handler import TaskOutputStorageHandler  # noqa: E402
from pydantic import BaseModel, ConfigDict, PrivateAttr  # noqa: E402

from core.benchmark import Benchmark, rerenders_handoffs  # noqa: E402
from core.communication import CommunicationLog  # noqa: E402
from core.contracts import ContractPolicy  # noqa: E402
from core.framework import AgentLink, FrameworkContext, GatewaySession  # noqa: E402
from core.models import AgentOutput, PromptBundle, Row  # noqa: E402
from topologies.messages import editable, finish_output, system_prompt, tools_for  # noqa: E402
from topologies.teams import check_team_size, team_spec  # noqa: E402

# CrewAI logs a warning on every tool result it sizes for a model it has no token counter for (the engine's model
# ids); stderr belongs to the engine's structured log, and the estimate changes nothing the gateway records
logging.getLogger("crewai.llms.base_llm").setLevel(logging.ERROR)

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
    """A dataset tool as a CrewAI tool, executed through the recording gateway on the job's event loop.

    CrewAI runs tools in threads of its own (not the anyio worker thread that runs `kickoff`), so the call reaches
    the loop by its token rather than by `call_tool_blocking`. An error here is not handed to the model as
    CrewAI would do: it is kept and re-raised after the crew ends, so the attempt fails as what it is."""

    _gateway: Any = PrivateAttr()
    _role: str = PrivateAttr()
    _token: Any = PrivateAttr()
    _errors: list[BaseException] = PrivateAttr()
    _used: set[str] = PrivateAttr(default_factory=set)

    def bind(self, gateway: GatewaySession, role: str, errors: list[BaseException]) -> "GatewayTool":
        self._gateway, self._role, self._errors = gateway, role, errors
        self._token = anyio.lowlevel.current_token()
        return self

    def _run(self, *args: Any, **kwargs: Any) -> str:
        try:
            result: str = anyio.from_thread.run(self._gateway.call_tool, self._role, 0, self.name, kwargs,
                                                self._call_id(kwargs), token=self._token)
        except BaseException as exc:
            self._errors.append(exc)
            raise
        return result


    def _call_id(self, arguments: dict[str, Any]) -> str | None:
        """The id of the model's tool call this execution answers (CrewAI does not pass it on): the first call of
        the role's latest reply with these arguments whose id no earlier execution took."""
        mine = [c for c in self._gateway.calls() if c.role == self._role and c.member == 0]
        if not mine:
            return None
        for call in mine[-1].tool_calls:
            call_id = call.get("id")
            if call_id and call_id not in self._used and parsed_arguments(call.get("arguments")) == arguments:
                self._used.add(call_id)
                return str(call_id)
        return None


def parsed_arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return arguments
    return arguments


def crew_tools(gateway: GatewaySession, role: str, schemas: Sequence[dict[str, Any]],
               errors: list[BaseException]) -> list[BaseTool]:
    tools: list[BaseTool] = []
    for schema in schemas:
        function = schema["function"]
        name = function["name"]
        tool = GatewayTool(name=name, description=function.get("description") or name,
                           args_schema=arguments_model(name, function.get("parameters") or {"type": "object"}))
        tools.append(tool.bind(gateway, role, errors))
    return tools


def crew_llm(link: AgentLink, options: dict[str, Any]) -> LLM:
    """CrewAI's native OpenAI provider on the agent's gateway route; CrewAI's own retries off."""
    return LLM(model=f"openai/{link.model}", base_url=link.base_url, api_key=link.api_key, max_retries=0,
               **options)


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


class InMemoryTaskOutputs(TaskOutputStorageHandler):
    """CrewAI's kickoff log (what `crewai replay` reads) kept with the crew. CrewAI's default writes every crew's
    task outputs into one SQLite file under the user's data directory, under a global file lock, and empties it at
    every kickoff: concurrent rollouts would contend for it, and prompts and answers would leave the job directory."""

    def __init__(self) -> None:  # no super().__init__(): it opens that shared file
        self.outputs: list[dict[str, Any]] = []

    def update(self, task_index: int, log: dict[str, Any]) -> None:
        self.outputs.append({"task_index": task_index, "raw": log["output"]["raw"]})

    def add(self, task: Task, output: dict[str, Any], task_index: int, inputs: dict[str, Any] | None = None,
            was_replayed: bool = False) -> None:
        self.outputs.append({"task_index": task_index, "raw": output.get("raw")})

    def reset(self) -> None:
        self.outputs.clear()

    def load(self) -> list[dict[str, Any]] | None:
        return list(self.outputs)


class RecordedCrew(Crew):
    """A Crew whose kickoff log stays in memory (InMemoryTaskOutputs)."""

    _task_output_handler: TaskOutputStorageHandler = PrivateAttr(default_factory=InMemoryTaskOutputs)


class CrewSequential:
    name = "sequential"
    framework = FRAMEWORK
    # sampling options a CrewAI user sets on the LLM (none by default); the gateway sends the protocol's decoding
    # instead and records these as the call's `framework_params`
    llm_options: ClassVar[dict[str, Any]] = {}

    def __init__(self, team_size: int = 4, communication: str = "freeform", contract_version: int = 1):
        self.team_size = check_team_size(self.name, team_size)
        self.communication = communication
        self.policy = ContractPolicy(contract_version)
        CommunicationLog(communication)

    def roles(self, task: str, team_size: int) -> list[str]:
        return [stage.role for stage in team_spec(task).stages(team_size)]

    def _crew(self, gw: GatewaySession, row: Row, bundle: PromptBundle, bench: Benchmark,
              comm: CommunicationLog, tool_errors: list[BaseException]) -> Crew:
        """The crew for one rollout attempt (every gateway link created here, on the event loop)."""
        spec = team_spec(bench.name)
        stages = spec.stages(self.team_size)
        task_text = bench.render_task(row)
        native_tools = [] if bench.answer_is_native_call else tools_for(bench, row, self.name)
        limit = spec.stage_step_limit()
        tasks: list[Task] = []
        agents: list[BaseAgent] = []
        for index, stage in enumerate(stages):
            last = index == len(stages) - 1
            earlier = [s.role for s in stages[:index]]
            link = gw.agent(stage.role, 0, reads=partial(last_nodes, gw, earlier))
            tools = crew_tools(gw, stage.role, native_tools, tool_errors) if stage.tools and native_tools else []
            agent = Agent(role=stage.role, goal=STAGE_GOAL.format(role=stage.role),
                          backstory=system_prompt(editable(bundle, stage.role), answering=last, bench=bench,
                                                  comm=comm, role=stage.role, policy=self.policy),
                          llm=crew_llm(link, self.llm_options), tools=tools, allow_delegation=False, verbose=False, cache=False,
                          max_iter=limit if tools else 1, max_retry_limit=0, respect_context_window=False)
            expected = FINAL_OUTPUT if last else STAGE_OUTPUT.format(role=stage.role)
            tasks.append(Task(description=stage.user_message(task_text), expected_output=expected, agent=agent,
                              context=list(tasks)))
            agents.append(agent)
        return RecordedCrew(agents=agents, tasks=tasks, process=Process.sequential, verbose=False, memory=False,
                    cache=False, planning=False, tracing=False)

    async def run(self, row: Row, bundle: PromptBundle, ctx: FrameworkContext, bench: Benchmark) -> AgentOutput:
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        stages = [s.role for s in team_spec(bench.name).stages(self.team_size)]
        tool_errors: list[BaseException] = []
        stopped: dict[str, str] | None = None
        async with ctx.gateway(FRAMEWORK) as gw:
            crew = self._crew(gw, row, bundle, bench, comm, tool_errors)
            try:
                await anyio.to_thread.run_sync(kickoff, crew)
            except Exception as exc:
                stopped = empty_answer_stop(gw, exc)
                if stopped is None or tool_errors:
                    raise
            finally:
                close_clients(crew)
            if tool_errors:
                raise tool_errors[0]
            outputs = final_texts(gw, stages)
            calls = gw.calls()
        for role in stages:
            comm.report(f"{role}.0", outputs[role])
        metadata: dict[str, Any] = {"team_size": self.team_size, "stages": stages, "framework": FRAMEWORK,
                                    **comm.metadata(), "role_outputs": outputs,
                                    "calls_per_stage": {r: sum(1 for c in calls if c.role == r) for r in stages}}
        if stopped is not None:
            metadata["framework_stopped"] = stopped
            outputs[stages[-1]] = None if stopped["stage"] != stages[-1] else outputs[stages[-1]]
        output = AgentOutput(text=outputs[stages[-1]], selected_member=0, metadata=metadata)
        return await finish_output(bench, row, ctx, output)


# CrewAI prints "[CrewAIEventsBus] Warning: Event pairing mismatch" to stdout when a model call fails (its
# llm_call_failed event closes a scope it did not open); stdout carries the job's one JSON line
QUIET_EVENTS = event_context.EventContextConfig(mismatch_behavior=event_context.MismatchBehavior.SILENT,
                                                empty_pop_behavior=event_context.MismatchBehavior.SILENT)


def kickoff(crew: Crew) -> None:
    """Run the crew (in the worker thread), its event-scope warnings silenced in this thread's context only."""
    token = event_context._event_context_config.set(QUIET_EVENTS)
    try:
        crew.kickoff()
    finally:
        event_context._event_context_config.reset(token)


def close_clients(crew: Crew) -> None:
    """Close each agent's HTTP client to the gateway (CrewAI leaves them to the garbage collector)."""
    for agent in crew.agents:
        client = getattr(agent.llm, "_client", None)
        if client is not None:
            client.close()


def empty_answer_stop(gateway: GatewaySession, exc: Exception) -> dict[str, str] | None:
    """CrewAI raises on a reply with empty content and no tool calls. That reply is an observed, malformed answer
    (protocol 5.3: a usable rollout scored 0, never an infrastructure failure to retry with the same seed): the
    crew stopped at that stage. Anything else is not this case (None)."""
    calls = gateway.calls()
    if not calls or not isinstance(exc, ValueError):
        return None
    last = calls[-1]
    if (last.content or "").strip() or last.tool_calls:
        return None
    return {"stage": last.role, "node_id": last.node_id, "error": f"{type(exc).__name__}: {exc}"}


RUNTIMES: dict[str, type] = {"sequential": CrewSequential}
