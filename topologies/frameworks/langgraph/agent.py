"""LangGraph agents on the recording gateway: the ChatOpenAI model the agents share, the ReAct graph every
LangGraph runtime uses for an agent's episode, and the ToolNode that runs the dataset's tools through the gateway.

Built once, routed per call (core.framework): one ChatOpenAI (and its loopback httpx client) per gateway and model
id, held by the gateway (`shared`), and one compiled ReAct graph per process (`react_graph`). What differs per
rollout or per episode travels as run configuration: the agent's route as per-call `extra_headers`, its tools as the
call's `tools`, and the episode (route, tools, step limit, tool answers) in `config["configurable"]["episode"]`,
which the model node, the router and the ToolNode's interceptor read. Nothing per-rollout is stored on a shared
object. Per rollout a runtime still creates only plain Python objects: the `Team` (the gateway session's view), one
`Episode` per agent episode, the runtime's own bookkeeping, and LangGraph's per-invocation objects (the Pregel loop,
its channels and tasks, LangChain's message objects and callback manager), which LangGraph builds on every
`ainvoke` of a compiled graph: measured at ~1.1-1.3 ms of CPU per `ainvoke` of the ReAct graph for one instant
model step (its checkpoint ids, channel writes, task preparation and callback metadata), the bulk of what a
LangGraph call costs over a native one. The routers are async functions and the model's result is built in the
event loop (`DoorChatOpenAI`): LangGraph and ChatOpenAI would run those sync steps in a thread pool, a thread hop
per step.

The ReAct graph is the prebuilt agent's shape (model node -> ToolNode -> model node ...), built here as a
StateGraph so its step limit means what the native loop's means: `max_steps` model calls, the tools of every
tool-calling reply executed (the last one's too), and for native-call answers (`answer_is_native_call`) the
episode ends at the first reply with tool calls, unexecuted. (The prebuilt `create_react_agent` replaces the
last tool-calling reply before its recursion limit with a canned "need more steps" message and counts graph
steps, not model calls; the native step limits would not carry over.)

The ToolNode's tool-call interceptor sends each call to the gateway (`call_tool`), one at a time in the reply's
order (ToolNode would otherwise run them concurrently), with the call's id, so the recorded tool events are the
native ones. What an episode said is read back from the gateway (`calls()`), not from LangChain's objects.

Known difference: a tool call whose arguments are not JSON is set aside by LangChain (`invalid_tool_calls`), so
the episode ends at that reply, where a native agent would run the call and get a tool error back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, TypedDict

import anyio
import httpx
import openai
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI
from langchain_openai.chat_models.base import _handle_openai_api_error, _handle_openai_bad_request
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from core.framework import AgentLink, GatewaySession, open_gateway
from topologies.frameworks.loopback import Door, DirectChat, LeanAsyncOpenAI, door_of, loopback_async_client
from core.topology import AgentContext
from topologies.messages import AgentTurn

FRAMEWORK = "langgraph"
ToolResult = Callable[[dict[str, Any]], Awaitable[str]]

# The gateway is plain HTTP on 127.0.0.1: no proxy from the environment, and no TLS (verify=False spares each
# client the ~40 ms of loading the CA store). ChatOpenAI builds a sync client too; the runtimes only call the
# async one, so all share this idle one.
_IDLE_SYNC_CLIENT = httpx.Client(trust_env=False, verify=False)


def start_messages(system: str, user: str) -> list[AnyMessage]:
    return [SystemMessage(content=system), HumanMessage(content=user)]


class DoorChatOpenAI(ChatOpenAI):
    """ChatOpenAI on the gateway's door (`DirectChat`): a plain non-streamed chat call builds the ChatResult in the
    event loop, where ChatOpenAI's own `_agenerate` hands that step to a thread-pool executor (a thread hop per
    call); the same payload, the same client call, the same `_create_chat_result` and error handling. Any other
    call (structured output, the Responses API) is ChatOpenAI's own."""

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: Any = None, **kwargs: Any) -> ChatResult:
        payload = self._get_request_payload(messages, stop=stop, **kwargs)
        if "response_format" in payload or payload.get("stream") or self._use_responses_api(payload):
            return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
        try:
            response = (await self.async_client.with_raw_response.create(**payload)).parse()
        except openai.BadRequestError as e:
            _handle_openai_bad_request(e)
            raise
        except openai.APIError as e:
            _handle_openai_api_error(e)
            raise
        return self._create_chat_result(response, {})


class SharedModel:
    """The ChatOpenAI every agent of a gateway's rollouts calls, on the gateway's route-free URL (an agent's route
    travels per call). With the gateway's in-process door (`door`), its calls go straight to it
    (topologies/frameworks/loopback.py `DirectChat`: the JSON body the SDK would send, no SDK, no sockets); else over
    the lean OpenAI client (no typed request transform) on one loopback HTTP client."""

    def __init__(self, base_url: str, model: str, api_key: str, door: Door | None = None) -> None:
        self.http = loopback_async_client(door=door)
        client = LeanAsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, http_client=self.http)
        sdk = client.chat.completions
        chat = ChatOpenAI if door is None else DoorChatOpenAI
        self.chat = chat(model=model, base_url=base_url, api_key=api_key,  # type: ignore[arg-type]
                         max_retries=0, async_client=sdk if door is None else DirectChat(door, sdk, base_url),
                         http_client=_IDLE_SYNC_CLIENT)

    async def aclose(self) -> None:
        await self.http.aclose()


@dataclass
class Team:
    """One rollout attempt's LangGraph agents: the gateway session, each agent's route, the shared model."""

    gw: GatewaySession
    _links: dict[tuple[str, int], AgentLink] = field(default_factory=dict)
    _tool_locks: dict[tuple[str, int], anyio.Lock] = field(default_factory=dict)
    last_tool_result: dict[tuple[str, int], str] = field(default_factory=dict)

    def link(self, role: str, member: int) -> AgentLink:
        key = (role, member)
        if key not in self._links:
            self._links[key] = self.gw.agent(role, member)
        return self._links[key]

    def model(self, link: AgentLink) -> ChatOpenAI:
        """The gateway's shared ChatOpenAI for this model id (built on the gateway's first rollout)."""
        shared: SharedModel = self.gw.shared((FRAMEWORK, link.model),
                                             lambda url: SharedModel(url, link.model, link.api_key,
                                                                     door_of(self.gw)))
        return shared.chat

    async def call(self, role: str, member: int, messages: Sequence[AnyMessage],
                   tools: Sequence[dict[str, Any]] | None = None) -> AIMessage:
        """One model call of the agent (role, member): the shared model, this agent's route, these tools."""
        link = self.link(role, member)
        extra: dict[str, Any] = {"tools": [convert_to_openai_tool(t) for t in tools]} if tools else {}
        reply: AIMessage = await self.model(link).ainvoke(list(messages), extra_headers=link.headers, **extra)
        return reply

    def tool_lock(self, role: str, member: int) -> anyio.Lock:
        return self._tool_locks.setdefault((role, member), anyio.Lock())

    async def run_tool(self, role: str, member: int, call: dict[str, Any]) -> str:
        """One dataset tool call through the gateway (recorded against the agent's latest model call)."""
        async with self.tool_lock(role, member):
            result = await self.gw.call_tool(role, member, str(call["name"]), call.get("args"), call.get("id"))
        self.last_tool_result[(role, member)] = result
        return result


@asynccontextmanager
async def open_team(ctx: AgentContext) -> AsyncIterator[Team]:
    async with open_gateway(ctx, FRAMEWORK) as gw:
        yield Team(gw)


@dataclass
class Episode:
    """One agent episode's run configuration (`config["configurable"]["episode"]` of the shared graphs)."""

    team: Team
    role: str
    member: int
    tools: Sequence[dict[str, Any]] | None
    max_steps: int
    native_call_answer: bool
    answer: ToolResult
    lock: anyio.Lock = field(default_factory=anyio.Lock)


def episode_of(config: Any) -> Any:
    """What a shared graph's node reads per run: `config["configurable"][...]`."""
    return config["configurable"]


def tool_node(answer: Callable[[Any, dict[str, Any]], Awaitable[str]]) -> ToolNode:
    """A ToolNode (no tool registered) whose every call is answered by `answer(configurable, tool_call)`, one at a
    time in the reply's order (`configurable["tool_lock"]`, FIFO: ToolNode gathers the calls)."""

    async def intercept(request: Any, execute: Any) -> ToolMessage:
        call = dict(request.tool_call)
        configurable = episode_of(request.runtime.config)
        async with configurable["tool_lock"]:
            content = await answer(configurable, call)
        return ToolMessage(content=content, tool_call_id=str(call.get("id")), name=str(call.get("name")))

    return ToolNode([], awrap_tool_call=intercept)


class ReactState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: int


async def _answer_episode_call(configurable: Any, call: dict[str, Any]) -> str:
    return await configurable["episode"].answer(call)


@cache
def react_graph() -> Any:
    """model -> ToolNode -> model ... until a reply without tool calls, `max_steps` model calls, or (native-call
    answers) the first reply with tool calls; the episode (`Episode`) comes with each run's config. A reply
    calling tools it was not offered gets the gateway's answer for them, as a native agent does. Compiled once."""

    async def agent(state: ReactState, config: RunnableConfig) -> dict[str, Any]:
        run: Episode = episode_of(config)["episode"]
        reply = await run.team.call(run.role, run.member, state["messages"], run.tools)
        return {"messages": [reply], "steps": state["steps"] + 1}

    # the routers are async: LangGraph runs a sync one in its thread pool (a thread hop per step)
    async def after_agent(state: ReactState, config: RunnableConfig) -> str:
        calls = getattr(state["messages"][-1], "tool_calls", None)
        if not calls or episode_of(config)["episode"].native_call_answer:
            return END
        return "tools"

    async def after_tools(state: ReactState, config: RunnableConfig) -> str:
        return END if state["steps"] >= episode_of(config)["episode"].max_steps else "agent"

    graph = StateGraph(ReactState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", after_agent, ["tools", END])
    graph.add_node("tools", tool_node(_answer_episode_call))
    graph.add_conditional_edges("tools", after_tools, ["agent", END])
    return graph.compile()


async def react(team: Team, *, role: str, member: int, messages: list[AnyMessage],
                tools: Sequence[dict[str, Any]] | None, reads: Sequence[str], max_steps: int,
                native_call_answer: bool = False) -> tuple[AgentTurn, list[AnyMessage]]:
    """One agent episode on the LangGraph ReAct graph: the turn as the gateway recorded it, and the messages the
    episode added to `messages`. The first call reads `reads`; each later call reads the previous one."""
    if max_steps < 1:
        raise ValueError("an agent turn needs at least one step")
    gw = team.gw
    team.link(role, member)
    before = len(gw.nodes(role, member))
    gw.feed(role, member, tuple(reads))
    team.last_tool_result.pop((role, member), None)

    async def answer(call: dict[str, Any]) -> str:
        return await team.run_tool(role, member, call)

    run = Episode(team, role, member, tools or None, max_steps, native_call_answer, answer)
    final = await react_graph().ainvoke({"messages": list(messages), "steps": 0},
                                        config={"recursion_limit": 2 * max_steps + 2,
                                                "configurable": {"episode": run, "tool_lock": run.lock}})
    return episode(team, role, member, before, native_call_answer), list(final["messages"][len(messages):])


def episode(team: Team, role: str, member: int, before: int, native_call_answer: bool) -> AgentTurn:
    """The turn an agent's latest episode made, from the gateway's record of its calls since `before`."""
    nodes = team.gw.nodes(role, member)[before:]
    if not nodes:
        raise RuntimeError(f"the LangGraph agent {role}.{member} made no model call")
    last = next(c for c in reversed(team.gw.calls()) if c.node_id == nodes[-1])
    result = team.last_tool_result.get((role, member))
    if not last.tool_calls:
        return AgentTurn(text=last.content, tool_calls=(), node_id=last.node_id, nodes=nodes,
                         last_tool_result=result)
    if native_call_answer:
        return AgentTurn(text=last.content, tool_calls=last.tool_calls, node_id=last.node_id, nodes=nodes)
    return AgentTurn(text=last.content, tool_calls=(), node_id=last.node_id, nodes=nodes, stop="step_limit",
                     last_tool_result=result)
