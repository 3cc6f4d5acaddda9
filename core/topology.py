"""The seam between topologies and the engine.

A topology never touches the store or HTTP: it receives an AgentContext already bound to its rollout, and every
call through it is recorded (one agent-turn node per chat call; `reads` names the nodes whose output the turn
read, which become edges).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from core.benchmark import Benchmark
from core.models import AgentOutput, PromptBundle, Row


@dataclass(frozen=True)
class ChatReply:
    content: str | None
    tool_calls: tuple[dict[str, Any], ...]  # {"id", "name", "arguments" (JSON text or object)}
    finish_reason: str | None
    node_id: str
    turn: int
    replayed: bool = False
    usage: dict[str, int | None] = field(default_factory=dict)


class AgentContext(Protocol):
    async def chat(self, *, role: str, member: int, messages: list[dict[str, Any]],
                   tools: Sequence[dict[str, Any]] | None = None, reads: Sequence[str] = ()) -> ChatReply: ...

    async def call_tool(self, *, role: str, member: int, node_id: str, call: dict[str, Any]) -> str: ...


class Topology(Protocol):
    name: str

    def roles(self, task: str, team_size: int) -> list[str]:
        """The editable roles of this topology for a dataset and team size (keys of the prompt bundle)."""
        ...

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput: ...


@dataclass(frozen=True)
class AgentScope:
    """Which agent a tool call comes from: the rollout attempt's context object, the role and the member.

    Set by the topologies around every agent's turn (`agent_scope`), read by benchmarks whose tools keep state per
    agent (e.g. one repository clone per replica / peer, shared by the stages of a pipeline)."""

    rollout: object
    role: str
    member: int


CURRENT_AGENT: ContextVar[AgentScope | None] = ContextVar("mpb_current_agent", default=None)


@contextmanager
def agent_scope(rollout: object, role: str, member: int) -> Iterator[AgentScope]:
    scope = AgentScope(rollout, role, member)
    token = CURRENT_AGENT.set(scope)
    try:
        yield scope
    finally:
        CURRENT_AGENT.reset(token)
