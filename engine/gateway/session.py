"""One rollout attempt's session on the recording gateway (core.framework.GatewaySession).

Each agent the runtime creates gets an opaque route token; a request on that route becomes the agent's next turn
through the attempt's recorded context (`RecordedAgentContext.chat`: seed per (rollout, role, member, turn),
the protocol's decoding, the outage-aware pool, replay by logical key, the `model_call` event). The calls of one
agent are serialized, so its turn numbers follow its own order whatever the framework's threads do.

The first failure of an upstream call (or of a tool's backend) poisons the session: later requests are refused
at once, and leaving the session raises that failure, so the attempt ends as the infrastructure failure it is
(retried with the same seed) even when the framework swallowed the error or retried on its own.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import anyio

from core.errors import InfrastructureError
from core.framework import AgentLink, GatewayCall, ReadsFn
from core.topology import ChatReply, agent_scope
from engine.chat.endpoint import EndpointPool
from engine.gateway.translate import FrameworkRequest

T = TypeVar("T")
API_KEY = "mpb-gateway"  # frameworks insist on a key; the gateway needs none (routes are unguessable tokens)


class RecordedTurns(Protocol):
    """What a session drives: the attempt's recorded context (engine/agent_context.py), known by its shape only,
    so the gateway does not import the context that opens sessions on it."""

    pool: EndpointPool

    async def chat(self, *, role: str, member: int, messages: list[dict[str, Any]],
                   tools: Sequence[dict[str, Any]] | None = None, reads: Sequence[str] = (),
                   framework: str | None = None, requested: Sequence[tuple[str, str]] = ()) -> ChatReply: ...

    async def call_tool(self, *, role: str, member: int, node_id: str, call: dict[str, Any]) -> str: ...


class Routes(Protocol):
    """The gateway's side of a session (engine/gateway/server.py): its URL, the route table, shared objects."""

    @property
    def url(self) -> str: ...

    def register(self, token: str, session: RolloutSession) -> None: ...

    def unregister(self, token: str) -> None: ...

    def shared(self, key: Hashable, build: Callable[[str], T]) -> T: ...

    async def door(self, token: str, body: bytes) -> tuple[int, Any]: ...


class SessionFailed(InfrastructureError):
    """A request on a session whose attempt already failed."""

    kind = "gateway_session_failed"


@dataclass
class _Agent:
    role: str
    member: int
    reads: ReadsFn | None
    pending: tuple[str, ...] | None = None
    nodes: list[str] = field(default_factory=list)
    lock: anyio.Lock = field(default_factory=anyio.Lock)


class RolloutSession:
    def __init__(self, gateway: Routes, ctx: RecordedTurns, framework: str):
        self.gateway, self.ctx, self.framework = gateway, ctx, framework
        self.failure: Exception | None = None
        self._agents: dict[str, _Agent] = {}
        self._tokens: dict[tuple[str, int], str] = {}
        self._calls: list[GatewayCall] = []

    @property
    def model(self) -> str:
        return self.ctx.pool.model_id

    def agent(self, role: str, member: int = 0, *, reads: ReadsFn | None = None) -> AgentLink:
        key = (role, member)
        token = self._tokens.get(key)
        if token is None:
            token = secrets.token_urlsafe(18)
            self._tokens[key] = token
            self._agents[token] = _Agent(role, member, reads)
            self.gateway.register(token, self)
        elif reads is not None:
            self._agents[token].reads = reads
        return AgentLink(base_url=f"{self.gateway.url}/g/{token}/v1", api_key=API_KEY, model=self.model,
                         role=role, member=member, route=token)

    def shared(self, key: Hashable, build: Callable[[str], T]) -> T:
        return self.gateway.shared(key, build)

    @property
    def door(self) -> Callable[[str, bytes], Awaitable[tuple[int, Any]]]:
        """The gateway's in-process door (`Gateway.door`: a route token and a request body in, the answer out),
        for a runtime's client in this process; what it records is what the HTTP route records."""
        return self.gateway.door

    def _agent(self, role: str, member: int) -> _Agent:
        token = self._tokens.get((role, member))
        if token is None:
            self.agent(role, member)
            token = self._tokens[(role, member)]
        return self._agents[token]

    def feed(self, role: str, member: int, nodes: Sequence[str]) -> None:
        self._agent(role, member).pending = tuple(nodes)

    def nodes(self, role: str, member: int = 0) -> tuple[str, ...]:
        token = self._tokens.get((role, member))
        return () if token is None else tuple(self._agents[token].nodes)

    def calls(self) -> tuple[GatewayCall, ...]:
        return tuple(self._calls)

    def _reads(self, agent: _Agent) -> tuple[str, ...]:
        if agent.pending is not None:
            reads, agent.pending = agent.pending, None
            return reads
        if agent.nodes:
            return (agent.nodes[-1],)
        return tuple(agent.reads()) if agent.reads is not None else ()

    def fail(self, exc: Exception) -> None:
        if self.failure is None:
            self.failure = exc

    async def complete(self, token: str, request: FrameworkRequest) -> ChatReply:
        """The agent's next turn (called by the server on the event loop)."""
        agent = self._agents[token]
        async with agent.lock:
            if self.failure is not None:
                raise SessionFailed(f"an earlier call of this rollout attempt failed: {self.failure}")
            reads = self._reads(agent)
            try:
                reply = await self.ctx.chat(role=agent.role, member=agent.member, messages=request.messages,
                                            tools=request.tools, reads=reads,
                                            framework=self.framework, requested=request.requested)
            except Exception as exc:
                self.fail(exc)
                raise
            agent.nodes.append(reply.node_id)
            self._calls.append(GatewayCall(role=agent.role, member=agent.member, turn=reply.turn,
                                           node_id=reply.node_id, reads=reads, content=reply.content,
                                           tool_calls=reply.tool_calls))
            return reply

    async def call_tool(self, role: str, member: int, name: str, arguments: Any, call_id: str | None = None) -> str:
        agent = self._agent(role, member)
        if not agent.nodes:
            raise InfrastructureError(f"{self.framework} ran tool {name!r} for {role}.{member} before any model call")
        if self.failure is not None:
            raise SessionFailed(f"an earlier call of this rollout attempt failed: {self.failure}")
        call = {"id": call_id, "name": name, "arguments": arguments}
        try:
            with agent_scope(self.ctx, role, member):
                return await self.ctx.call_tool(role=role, member=member, node_id=agent.nodes[-1], call=call)
        except InfrastructureError as exc:
            self.fail(exc)
            raise

    def close(self) -> None:
        for token in self._agents:
            self.gateway.unregister(token)


@asynccontextmanager
async def open_session(gateway: Routes, ctx: RecordedTurns, framework: str) -> AsyncIterator[RolloutSession]:
    session = RolloutSession(gateway, ctx, framework)
    try:
        yield session
    except Exception as exc:
        if session.failure is not None and session.failure is not exc:
            raise session.failure from exc
        raise
    finally:
        session.close()
    if session.failure is not None:
        raise session.failure
