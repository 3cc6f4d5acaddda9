"""CrewAI plumbing of the sequential runtime (topologies/frameworks/crewai.py): dataset tools as CrewAI tools executed through
the recording gateway, the agents' LLM on a gateway route, a Crew whose kickoff log stays in memory, a quiet kickoff.

Importing this module switches CrewAI's telemetry, tracking and tracing off (before crewai is imported), so CrewAI
contacts nothing but the gateway.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Sequence
from typing import Any, ClassVar

for _name, _value in (("CREWAI_DISABLE_TELEMETRY", "true"), ("CREWAI_DISABLE_TRACKING", "true"),
                      ("OTEL_SDK_DISABLED", "true"), ("CREWAI_TRACING_ENABLED", "false")):
    os.environ[_name] = _value

import anyio.from_thread  # noqa: E402
from crewai import Crew, Task  # noqa: E402
from crewai.events import event_context  # noqa: E402
from crewai.llms.providers.openai.completion import OpenAICompletion  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402
from crewai.utilities.task_output_storage_handler import TaskOutputStorageHandler  # noqa: E402
from openai import AsyncOpenAI, OpenAI  # noqa: E402
from pydantic import BaseModel, ConfigDict, PrivateAttr  # noqa: E402

from core.framework import AgentLink, GatewaySession  # noqa: E402
from topologies.frameworks.loopback import async_http_client, sync_http_client  # noqa: E402

# CrewAI logs a warning on every tool result it sizes for a model it has no token counter for (the engine's model
# ids); stderr belongs to the engine's structured log, and the estimate changes nothing the gateway records
logging.getLogger("crewai.llms.base_llm").setLevel(logging.ERROR)


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
    the loop by its token (`anyio.from_thread.run(..., token=)`). An error here is not handed to the model as
    CrewAI would do: it is kept and re-raised after the crew ends, so the attempt fails as what it is."""

    _gateway: Any = PrivateAttr()
    _role: str = PrivateAttr()
    _token: Any = PrivateAttr()
    _errors: list[BaseException] = PrivateAttr()
    _used: set[str] = PrivateAttr(default_factory=set)

    def bind(self, gateway: GatewaySession, role: str, errors: list[BaseException], token: Any) -> "GatewayTool":
        self._gateway, self._role, self._errors, self._token = gateway, role, errors, token
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
               errors: list[BaseException], token: Any) -> list[BaseTool]:
    """The dataset's tools for one stage; `token` is the job's event loop (anyio.lowlevel.current_token())."""
    tools: list[BaseTool] = []
    for schema in schemas:
        function = schema["function"]
        name = function["name"]
        tool = GatewayTool(name=name, description=function.get("description") or name,
                           args_schema=arguments_model(name, function.get("parameters") or {"type": "object"}))
        tools.append(tool.bind(gateway, role, errors, token))
    return tools


class GatewayLLM(OpenAICompletion):
    """CrewAI's native OpenAI provider (what `LLM(model="openai/<model>")` builds) whose OpenAI clients share the
    process's loopback TLS context (topologies/frameworks/loopback.py) instead of loading the CA bundle twice per agent."""

    def _build_sync_client(self) -> Any:
        return OpenAI(**self._get_client_params(), http_client=sync_http_client())

    def _build_async_client(self) -> Any:
        return AsyncOpenAI(**self._get_client_params(), http_client=async_http_client())


def crew_llm(link: AgentLink, options: dict[str, Any]) -> GatewayLLM:
    """The agent's model on its gateway route (`openai/<model>` in CrewAI's terms); CrewAI's own retries off."""
    return GatewayLLM(model=link.model, provider="openai", base_url=link.base_url, api_key=link.api_key,
                      max_retries=0, **options)


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
