"""The seam between a framework runtime (LangGraph, CrewAI, AutoGen, the Agents SDK) and the engine.

A framework runtime is a topology whose agents are a framework's own objects. They talk to the model through the
engine's recording gateway: each agent gets an OpenAI-compatible base URL (`AgentLink`) that names its rollout,
role and member, so every call the framework makes is recorded, seeded and decoded exactly like a native turn.
Tools the framework executes call back through `GatewaySession.call_tool`, which runs the benchmark's tool
implementation and records the tool events against the agent's latest model call.

Reads (the card's edges): by default the first call of an agent reads what the runtime declared with
`agent(..., reads=...)` and every later call reads that agent's previous call; `feed` overrides the next call's
reads (a runtime that knows who read whom, e.g. a LangGraph node reading earlier stages, feeds them).

Built once, routed per call: a runtime's clients, models and agents need not be built per rollout. `shared(key,
build)` keeps one object per key for the gateway's lifetime (`build` gets the gateway's route-free base URL; an
object with `aclose` is closed when the gateway stops), and a request sent there names its agent by the
`AgentLink.headers` it carries (the route token in `ROUTE_HEADER`) instead of by its URL.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from core.errors import ContractError
from core.topology import AgentContext

ReadsFn = Callable[[], Sequence[str]]
T = TypeVar("T")
ROUTE_HEADER = "X-Gateway-Route"


@dataclass(frozen=True)
class AgentLink:
    """Where one agent of a framework sends its chat completions (`base_url` ends with /v1)."""

    base_url: str
    api_key: str
    model: str
    role: str
    member: int
    route: str = ""  # the opaque route token (the same one `base_url` carries)

    @property
    def headers(self) -> dict[str, str]:
        """What a request to the gateway's shared base URL carries to name this agent."""
        return {ROUTE_HEADER: self.route}


@dataclass(frozen=True)
class GatewayCall:
    """One model call the gateway recorded for this rollout attempt, in arrival order."""

    role: str
    member: int
    turn: int
    node_id: str
    reads: tuple[str, ...]
    content: str | None
    tool_calls: tuple[dict[str, Any], ...]


class GatewaySession(Protocol):
    """One rollout attempt's view of the recording gateway."""

    framework: str

    def agent(self, role: str, member: int = 0, *, reads: ReadsFn | None = None) -> AgentLink: ...

    def feed(self, role: str, member: int, nodes: Sequence[str]) -> None: ...

    def nodes(self, role: str, member: int = 0) -> tuple[str, ...]: ...

    def calls(self) -> tuple[GatewayCall, ...]: ...

    async def call_tool(self, role: str, member: int, name: str, arguments: Any, call_id: str | None = None) -> str: ...

    def shared(self, key: Hashable, build: Callable[[str], T]) -> T: ...


@runtime_checkable
class FrameworkContext(AgentContext, Protocol):
    """The agent context a framework runtime receives: the usual recorded chat plus the gateway."""

    def gateway(self, framework: str) -> AbstractAsyncContextManager[GatewaySession]: ...


def open_gateway(ctx: AgentContext, framework: str) -> AbstractAsyncContextManager[GatewaySession]:
    """The rollout attempt's gateway session; a context without one breaks the runtime's contract."""
    if not isinstance(ctx, FrameworkContext):
        raise ContractError(f"the {framework} runtime needs the recording gateway (a framework context)")
    return ctx.gateway(framework)
