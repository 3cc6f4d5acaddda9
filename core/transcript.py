"""A rollout's transcript as the optimizer seam hands it out (core.optimizer.SessionRunner.transcript).

Every recorded, successful agent turn of one rollout, in the order they were recorded: who spoke (role, member,
turn), which attempt of the rollout it belongs to, what the agent was shown (the request messages), what it
answered (text and tool calls) and the tool replies that answered those tool calls. Pure values: the engine builds
them from the store (engine/store/reads.py `transcripts`), methods read them (MAPRO, MASPO, TAVO).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolReply:
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Turn:
    role: str
    member: int
    turn: int
    attempt: str  # the rollout attempt (task execution) it was recorded in
    messages: tuple[dict[str, Any], ...]  # the request's messages, as sent
    reply: str  # the reply's text ("" when it only called tools)
    tool_calls: tuple[dict[str, Any], ...] = ()
    tool_replies: tuple[ToolReply, ...] = ()


@dataclass(frozen=True)
class Transcript:
    rollout_id: str
    turns: tuple[Turn, ...] = ()

    def final_attempt(self) -> tuple[Turn, ...]:
        """The turns of the rollout's last recorded attempt (the one its record comes from)."""
        if not self.turns:
            return ()
        last = self.turns[-1].attempt
        return tuple(t for t in self.turns if t.attempt == last)

    def role_outputs(self) -> dict[str, str]:
        """The last reply text of every role (a later attempt's wins), in the order the roles first spoke."""
        out: dict[str, str] = {}
        for t in self.turns:
            out[t.role] = t.reply
        return out
