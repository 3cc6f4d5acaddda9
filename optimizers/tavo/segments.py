"""TAVO's sub-trajectories (protocol 8.8): how one rollout's transcript is cut into the units the judge scores.

A team with a manager (centralized): a sub-trajectory is one manager turn plus everything until the next manager
turn (the delegated workers' turns and every tool reply in between). Turns recorded before the manager's first
turn (a report round: workers report, then the manager answers) are each their own sub-trajectory. Any other team:
one participant turn plus the tool replies to its tool calls. Only the rollout's last recorded attempt is cut (the
attempt its record and score come from). Pure: a Transcript in, Segments out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.transcript import Transcript, Turn

MANAGER = "manager"
TURN_CHARS = 1_200  # each turn's reply (and each tool reply) in a rendered sub-trajectory, head + tail


@dataclass(frozen=True)
class Segment:
    index: int
    turns: tuple[Turn, ...]

    @property
    def lead(self) -> str:
        return self.turns[0].role

    @property
    def roles(self) -> tuple[str, ...]:
        """Every role that spoke in it, lead first (each role it credits)."""
        return tuple(dict.fromkeys(t.role for t in self.turns))

    def render(self) -> str:
        lines = []
        for t in self.turns:
            calls = ", ".join(str((c.get("function") or c).get("name", "")) for c in t.tool_calls)
            lines.append(f"[{t.role}#{t.member} turn {t.turn}] {_cut(t.reply)}" + (f" (tool calls: {calls})"
                                                                                  if calls else ""))
            lines.extend(f"  [tool {r.name}{' error' if r.is_error else ''}] {_cut(r.content)}"
                         for r in t.tool_replies)
        return "\n".join(lines)


def _cut(text: str, limit: int = TURN_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else f"{text[: limit // 2]} ... {text[-(limit // 2):]}"


def segment_turns(turns: Sequence[Turn]) -> list[Segment]:
    groups: list[list[Turn]] = []
    managed = any(t.role == MANAGER for t in turns)
    seen_manager = False
    for t in turns:
        if managed and t.role == MANAGER:
            seen_manager = True
            groups.append([t])
        elif managed and seen_manager:
            groups[-1].append(t)
        else:
            groups.append([t])
    return [Segment(i, tuple(g)) for i, g in enumerate(groups)]


def segments(transcript: Transcript) -> list[Segment]:
    return segment_turns(transcript.final_attempt())
