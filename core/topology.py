"""The seam between topologies and the engine.

A topology never touches the store or HTTP: it receives an AgentContext already bound to its rollout, and every
call through it is recorded (one agent-turn node per chat call; `reads` names the nodes whose output the turn
read, which become edges).
"""

from __future__ import annotations

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
