"""Centralized on AutoGen (protocol-v1 section 2.4, registry key `centralized_autogen`).

One `autogen_agentchat` AssistantAgent per role of the team spec (manager + workers), each with the system prompt
the native centralized topology builds for that role (contract, the manager's extension, communication format),
in a SelectorGroupChat: a selector function gives the manager the first turn and every turn after a worker; after
a manager turn it returns None and AutoGen's model-based selector picks the next speaker among all agents
(allow_repeated_speaker: AutoGen would otherwise bar the worker it picked last, so a manager could not delegate to
the same worker twice in a row; the manager may go on after its own tool call). The selector's model client has
its own gateway route (role `selector`, member 0): a recorded model call, not a prompt role.
Termination: TextMentionTermination("TERMINATE", sources=[manager]) | MaxMessageTermination(turn cap); AutoGen
counts the task message, as its reference setup does.

The manager is offered the native `delegate_to_<worker>` tools (the same schemas and descriptions), because its
prompt, identical to native, tells it to delegate with them: a delegate call names the worker and its task in the
conversation, and the model-based selector reads that. The manager's tool loop is one step (a delegation ends its
turn); workers run up to the team spec's step limit. Dataset tools (where the team spec allows) execute through
the gateway (`call_tool`) on the job's event loop. Datasets whose answer is a native call get no
dataset tools in Centralized, as native.

Reads (card edges), fed before each turn from the selector function: the manager reads its previous turn and the
worker who just spoke; a worker (and the selector) reads the shared conversation so far (every agent message
in it). The answer is the manager's final message (TERMINATE stripped), read from the gateway's record of calls.
Teams in mode `report_round` run the native report round: the "AutoGen" variant of section 2.4
is the same code under another label.

Built once, routed per call: the OpenAI client (and its loopback HTTP client) is the gateway's, shared by every
rollout (topologies/frameworks/loopback.py `shared_openai`: no typed request transform, aiohttp underneath); each agent's
AutoGen model client talks through `routed(link)`, a view of it carrying the agent's route. What a rollout still
creates, because AutoGen's agents and teams hold the conversation they run: the AssistantAgents (each keeps its
model context), the SelectorGroupChat and its SingleThreadedAgentRuntime (`_Runtime`), one AutoGen model client per agent
(its usage counters are the agent's; ~0.02 ms on the shared client instead of ~0.15 ms with a client of its own)
and the row's tools.
"""

from __future__ import annotations

import asyncio
import logging
import os

import anyio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

os.environ.setdefault("AUTOGEN_DISABLE_RUNTIME_TRACING", "true")  # no telemetry, nothing leaves the machine

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.base import ChatAgent, TaskResult, Team  # noqa: E402
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination  # noqa: E402
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, ToolCallSummaryMessage  # noqa: E402
from autogen_agentchat.teams import SelectorGroupChat  # noqa: E402
from autogen_core import CancellationToken, SingleThreadedAgentRuntime  # noqa: E402
from autogen_core.models import ModelFamily, ModelInfo  # noqa: E402
from autogen_core.tools import BaseTool, ToolSchema  # noqa: E402
from autogen_ext.models.openai import BaseOpenAIChatCompletionClient  # noqa: E402
from pydantic import BaseModel, ConfigDict  # noqa: E402

from core.benchmark import Benchmark, rerenders_handoffs  # noqa: E402
from core.communication import CommunicationLog  # noqa: E402
from core.framework import AgentLink, GatewaySession, open_gateway  # noqa: E402
from core.models import AgentOutput, PromptBundle, Row  # noqa: E402
from topologies.frameworks.loopback import shared_openai  # noqa: E402
from core.topology import AgentContext  # noqa: E402
from topologies.centralized import (DELEGATE_PREFIX, TERMINATE, Centralized, delegate_tool,  # noqa: E402
                                    manager_extension, strip_terminate)
from topologies.messages import editable, finish_output, system_prompt, tools_for  # noqa: E402
from topologies.report_round import report_round  # noqa: E402
from topologies.teams import CentralizedTeam, team_spec  # noqa: E402

SELECTOR = "selector"
MODEL_INFO = ModelInfo(vision=False, function_calling=True, json_output=False, family=ModelFamily.UNKNOWN,
                       structured_output=False, multiple_system_messages=True)
AutogenTool = BaseTool[Any, Any] | Callable[..., Any] | Callable[..., Awaitable[Any]]
CLIENT_TIMEOUT_S = 3600.0  # the engine's recorded path owns the deadlines; the gateway always answers


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="allow")


class _SchemaTool(BaseTool[_Arguments, Any]):  # the return type is str (AutoGen bounds it to models)
    """An AutoGen tool with the OpenAI function schema exactly as the dataset (or native topology) gives it."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        function = spec["function"]
        super().__init__(_Arguments, str, function["name"], function.get("description", ""))
        self._parameters = function.get("parameters") or {"type": "object", "properties": {}}

    @property
    def schema(self) -> ToolSchema:
        return cast(ToolSchema, {"name": self.name, "description": self.description, "parameters": self._parameters})

    async def run(self, args: _Arguments, cancellation_token: CancellationToken) -> Any:
        return await self.invoke(args.model_dump(), None)

    async def run_json(self, args: Mapping[str, Any], cancellation_token: CancellationToken,
                       call_id: str | None = None) -> Any:
        return await self.invoke(dict(args), call_id)

    async def invoke(self, arguments: dict[str, Any], call_id: str | None) -> str:
        raise NotImplementedError


class _DatasetTool(_SchemaTool):
    """A benchmark tool run through the gateway (recorded against the agent's latest model call)."""

    def __init__(self, spec: Mapping[str, Any], gw: GatewaySession, role: str, results: list[str]) -> None:
        super().__init__(spec)
        self._gw, self._role, self._results = gw, role, results

    async def invoke(self, arguments: dict[str, Any], call_id: str | None) -> str:
        result = await self._gw.call_tool(self._role, 0, self.name, arguments, call_id)
        self._results.append(result)
        return result


class _DelegateTool(_SchemaTool):
    """`delegate_to_<worker>`: puts the worker and its task into the conversation for the selector to read."""

    def __init__(self, spec: Mapping[str, Any], worker: str) -> None:
        super().__init__(spec)
        self._worker = worker

    async def invoke(self, arguments: dict[str, Any], call_id: str | None) -> str:
        task = arguments.get("task", "")
        return f"{self._worker} takes the next turn; its task: {task}"


class _Conversation:
    """The selector function, and the reads it feeds the gateway before each turn."""

    def __init__(self, gw: GatewaySession, team: CentralizedTeam) -> None:
        self.gw, self.team = gw, team
        self.speakers: list[str] = []
        self.shared: list[str] = []  # the node of every agent message in the conversation, in order

    def select(self, thread: Sequence[BaseAgentEvent | BaseChatMessage]) -> str | None:
        manager = self.team.manager
        spoken = [m.source for m in thread if isinstance(m, BaseChatMessage) and m.source != "user"]
        for speaker in spoken[len(self.speakers):]:
            self.shared += self.gw.nodes(speaker)[-1:]  # the call that produced the message
        self.speakers = spoken
        if not spoken:
            return manager
        if spoken[-1] != manager:
            self.gw.feed(manager, 0, tuple(dict.fromkeys((*self.gw.nodes(manager)[-1:], self.shared[-1]))))
            return manager
        shared = tuple(dict.fromkeys(self.shared))
        for name in (SELECTOR, *(w.name for w in self.team.workers)):
            self.gw.feed(name, 0, shared)
        return None


_EVENTS = logging.getLogger("autogen_core.events")  # autogen_core's EVENT_LOGGER_NAME


class _Runtime(SingleThreadedAgentRuntime):
    """AutoGen's runtime, minus serializing every message it moves for its event log and trace attributes when
    neither is on (tracing off, as set above; the event logger below INFO): ~10% of its CPU per call."""

    def _try_serialize(self, message: Any) -> str:
        if _EVENTS.isEnabledFor(logging.INFO) or os.environ.get("AUTOGEN_DISABLE_RUNTIME_TRACING") != "true":
            return str(super()._try_serialize(message))
        return ""


async def _stop(runtime: SingleThreadedAgentRuntime) -> None:
    """End the group chat's in-flight handlers, then its runtime, so that nothing of a finished, failed or
    cancelled attempt outlives it (AutoGen's own shutdown leaves them running when its caller is cancelled)."""
    handlers = [t for t in getattr(runtime, "_background_tasks", ()) if not t.done()]  # AutoGen's handler tasks
    for task in handlers:
        task.cancel()
    if handlers:
        await asyncio.wait(handlers)
    for task in handlers:  # retrieved: the attempt's outcome is already decided (and recorded by the gateway)
        if not task.cancelled():
            task.exception()
    await runtime.stop()


def _client(gw: GatewaySession, link: AgentLink) -> BaseOpenAIChatCompletionClient:
    """AutoGen's OpenAI model client for one agent on the gateway's shared OpenAI client (its route as a header):
    what `OpenAIChatCompletionClient(model=..., base_url=..., timeout=...)` builds, minus a client of its own."""
    return BaseOpenAIChatCompletionClient(client=shared_openai(gw, link, CLIENT_TIMEOUT_S).routed(link),
                                          create_args={"model": link.model, "timeout": CLIENT_TIMEOUT_S},
                                          model_info=MODEL_INFO)


class AutogenCentralized(Centralized):
    name = "centralized"
    framework = "autogen"

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        team = team_spec(bench.name).centralized(self.team_size)
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        native = [] if bench.answer_is_native_call else tools_for(bench, row, self.name)
        if team.mode == "report_round":  # section 2.4: the AutoGen variant is the native report round
            output, outputs = await report_round(team, row, bundle, ctx, bench, comm, self.policy, native)
            metadata = {**output.metadata, "role_outputs": outputs, "framework": self.framework}
            return await finish_output(bench, row, ctx, output.model_copy(update={"metadata": metadata}))
        async with open_gateway(ctx, self.framework) as gw:
            speakers, tool_results, selections = await self._group_chat(row, bundle, bench, team, comm, native, gw)
            output = self._group_output(row, bench, team, comm, gw, speakers, tool_results, selections)
        return await finish_output(bench, row, ctx, output)

    def _agents(self, bundle: PromptBundle, bench: Benchmark, team: CentralizedTeam, comm: CommunicationLog,
                native: list[dict[str, Any]], gw: GatewaySession, results: list[str]) -> list[AssistantAgent]:
        manager_tools: list[AutogenTool] = [_DelegateTool(delegate_tool(w), w.name) for w in team.workers]
        if team.manager_tools:
            manager_tools += [_DatasetTool(spec, gw, team.manager, results) for spec in native]
        agents = [AssistantAgent(
            team.manager, model_client=_client(gw, gw.agent(team.manager, 0)), tools=manager_tools,
            max_tool_iterations=1,
            description="The manager: delegates to one worker at a time and gives the final answer.",
            system_message=system_prompt(editable(bundle, team.manager), answering=True, bench=bench, comm=comm,
                                         extension=manager_extension(team), role=team.manager,
                                         policy=self.policy))]
        for worker in team.workers:
            tools: list[AutogenTool] = ([_DatasetTool(spec, gw, worker.name, results) for spec in native]
                                        if worker.tools else [])
            agents.append(AssistantAgent(
                worker.name, model_client=_client(gw, gw.agent(worker.name, 0)), tools=tools or None,
                description=worker.description,
                max_tool_iterations=max(1, team.worker_step_limit) if tools else 1,
                system_message=system_prompt(editable(bundle, worker.name), answering=worker.answers, bench=bench,
                                             comm=comm, role=worker.name, policy=self.policy)))
        return agents

    async def _group_chat(self, row: Row, bundle: PromptBundle, bench: Benchmark, team: CentralizedTeam,
                          comm: CommunicationLog, native: list[dict[str, Any]],
                          gw: GatewaySession) -> tuple[list[str], list[str], int]:
        """Run the group chat and report each turn to `comm`; the speakers in order, the dataset tools' results,
        the selector's calls."""
        results: list[str] = []
        conversation = _Conversation(gw, team)
        termination = (TextMentionTermination(TERMINATE, sources=[team.manager])
                       | MaxMessageTermination(team.max_turns))
        agents = self._agents(bundle, bench, team, comm, native, gw, results)
        runtime = _Runtime()
        chat = SelectorGroupChat(list[ChatAgent | Team](agents), model_client=_client(gw, gw.agent(SELECTOR, 0)),
                                 termination_condition=termination, selector_func=conversation.select,
                                 allow_repeated_speaker=True, runtime=runtime)
        runtime.start()
        try:
            result = await chat.run(task=bench.render_task(row))
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(runtime)
        assert isinstance(result, TaskResult)
        said = [m for m in result.messages if isinstance(m, BaseChatMessage) and m.source != "user"]
        for message in said:  # what each turn handed to the conversation (a manager's delegation is no report)
            if message.source != team.manager:
                comm.report(f"{message.source}.0", message.to_model_text())
            elif not isinstance(message, ToolCallSummaryMessage):
                comm.report(f"{message.source}.0", strip_terminate(message.to_model_text()))
        return [m.source for m in said], results, len(gw.nodes(SELECTOR))

    def _group_output(self, row: Row, bench: Benchmark, team: CentralizedTeam, comm: CommunicationLog,
                gw: GatewaySession, speakers: list[str], tool_results: list[str], selections: int) -> AgentOutput:
        workers = {w.name for w in team.workers}
        calls = [c for c in gw.calls() if c.role != SELECTOR]
        manager_calls = [c for c in calls if c.role == team.manager]
        final = strip_terminate(manager_calls[-1].content) if manager_calls else None
        role_outputs: dict[str, str | None] = {}
        for call in calls:  # each agent's latest message (the manager's: its final one)
            role_outputs[call.role] = strip_terminate(call.content) if call.role == team.manager else call.content
        invalid = [{"manager_turn": c.turn, "tool": str(t.get("name"))} for c in manager_calls for t in c.tool_calls
                   if str(t.get("name", "")).startswith(DELEGATE_PREFIX)
                   and str(t.get("name"))[len(DELEGATE_PREFIX):] not in workers]
        stop = "terminate" if manager_calls and TERMINATE in (manager_calls[-1].content or "") else "turn_cap"
        metadata: dict[str, Any] = {
            "team_size": self.team_size, "manager": team.manager, "workers": [w.name for w in team.workers],
            "turns": len(calls), "max_turns": team.max_turns, "stop": stop,
            "delegations": [s for s in speakers if s in workers], "answer_source": team.manager,
            "framework": self.framework, "selector_calls": selections, **comm.metadata(),
            "role_outputs": role_outputs,
        }
        if stop == "turn_cap":
            metadata["stop_reason"] = f"turn cap of {team.max_turns} messages reached without {TERMINATE}"
        if invalid:
            metadata["invalid_delegations"] = invalid
        if tool_results:
            metadata["last_tool_result"] = tool_results[-1]
        if bench.vote_key(row, AgentOutput(text=final)) is None:
            metadata["no_valid_answer"] = True
        return AgentOutput(text=final, selected_member=0, metadata=metadata)


RUNTIMES: dict[str, type] = {"centralized": AutogenCentralized}
