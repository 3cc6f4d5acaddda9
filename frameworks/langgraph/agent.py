"""LangGraph agents on the recording gateway: one ChatOpenAI model per agent route, the ReAct graph every
LangGraph runtime uses for an agent's episode, and the ToolNode that runs the dataset's tools through the gateway.

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
from typing import Annotated, Any, TypedDict

import anyio
import httpx
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from core.framework import GatewaySession, open_gateway
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


@dataclass
class Team:
    """One rollout attempt's LangGraph agents: the gateway session and one model per (role, member)."""

    gw: GatewaySession
    http: httpx.AsyncClient
    _models: dict[tuple[str, int], ChatOpenAI] = field(default_factory=dict)
    _tool_locks: dict[tuple[str, int], anyio.Lock] = field(default_factory=dict)
    last_tool_result: dict[tuple[str, int], str] = field(default_factory=dict)

    def model(self, role: str, member: int) -> ChatOpenAI:
        key = (role, member)
        if key not in self._models:
            link = self.gw.agent(role, member)
            self._models[key] = ChatOpenAI(model=link.model, base_url=link.base_url, api_key=link.api_key,  # type: ignore[arg-type]
                                           max_retries=0, http_async_client=self.http,
                                           http_client=_IDLE_SYNC_CLIENT)
        return self._models[key]

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
    async with (open_gateway(ctx, FRAMEWORK) as gw,
                httpx.AsyncClient(trust_env=False, verify=False, timeout=None) as http):
        yield Team(gw, http)


def _declared_tool(schema: dict[str, Any]) -> BaseTool:
    """A registered stand-in for one OpenAI tool schema; the interceptor runs every call, never this body."""
    function = schema.get("function", {})

    async def unreachable(**_: Any) -> str:
        raise RuntimeError("LangGraph tool calls run through the gateway interceptor")

    return StructuredTool(name=str(function.get("name")), description=str(function.get("description") or ""),
                          args_schema=function.get("parameters") or {"type": "object", "properties": {}},
                          coroutine=unreachable)


def tool_node(tools: Sequence[dict[str, Any]], answer: ToolResult) -> ToolNode:
    """A ToolNode over the given OpenAI tool schemas whose every call (registered or not) is answered by
    `answer(tool_call)`, in the reply's order."""
    lock = anyio.Lock()

    async def intercept(request: Any, execute: Any) -> ToolMessage:
        call = dict(request.tool_call)
        async with lock:  # ToolNode gathers the calls; the lock (FIFO) keeps them in the reply's order
            content = await answer(call)
        return ToolMessage(content=content, tool_call_id=str(call.get("id")), name=str(call.get("name")))

    return ToolNode([_declared_tool(t) for t in tools], awrap_tool_call=intercept)


class ReactState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: int


def react_graph(model: ChatOpenAI, tools: Sequence[dict[str, Any]] | None, node: ToolNode, max_steps: int,
                native_call_answer: bool) -> Any:
    """model -> ToolNode -> model ... until a reply without tool calls, `max_steps` model calls, or (native-call
    answers) the first reply with tool calls. A reply calling tools it was not offered gets the gateway's
    answer for them, as a native agent does."""
    bound: Any = model.bind_tools(list(tools)) if tools else model

    async def agent(state: ReactState) -> dict[str, Any]:
        reply = await bound.ainvoke(state["messages"])
        return {"messages": [reply], "steps": state["steps"] + 1}

    def after_agent(state: ReactState) -> str:
        calls = getattr(state["messages"][-1], "tool_calls", None)
        if not calls or native_call_answer:
            return END
        return "tools"

    def after_tools(state: ReactState) -> str:
        return END if state["steps"] >= max_steps else "agent"

    graph = StateGraph(ReactState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", after_agent, ["tools", END])
    graph.add_node("tools", node)
    graph.add_conditional_edges("tools", after_tools, ["agent", END])
    return graph.compile()


async def react(team: Team, *, role: str, member: int, messages: list[AnyMessage],
                tools: Sequence[dict[str, Any]] | None, reads: Sequence[str], max_steps: int,
                native_call_answer: bool = False) -> tuple[AgentTurn, list[AnyMessage]]:
    """One agent episode on a LangGraph ReAct graph: the turn as the gateway recorded it, and the messages the
    episode added to `messages`. The first call reads `reads`; each later call reads the previous one."""
    if max_steps < 1:
        raise ValueError("an agent turn needs at least one step")
    gw = team.gw
    model = team.model(role, member)
    before = len(gw.nodes(role, member))
    gw.feed(role, member, tuple(reads))
    team.last_tool_result.pop((role, member), None)

    async def answer(call: dict[str, Any]) -> str:
        return await team.run_tool(role, member, call)

    graph = react_graph(model, tools, tool_node(tools or [], answer), max_steps, native_call_answer)
    final = await graph.ainvoke({"messages": list(messages), "steps": 0},
                                config={"recursion_limit": 2 * max_steps + 2})
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
