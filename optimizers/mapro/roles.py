"""Role graphs and transcripts shared by MAPRO and MASPO (pure: values in, text out).

Role graph (protocol 8.3 / 8.4): the optimizer sees only the ordered role names of the bundle, which the topologies
give in their native order. A team with a `manager` role is centralized: a star with the manager first (MAPRO's star
proxy), answered by the manager (the terminal role; MASPO visits the workers, then the manager). Any other team of
n > 1 roles is a pipeline in the given order (sequential: stage order, the last stage answers). A single role
(single, independent, decentralized: one prompt shared by every member) has no edges: a shared-prompt topology.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.models import RolloutRecord, Row
from optimizers.reflective_dataset import head_tail, output_text, task_text
from optimizers.scoring import score_of

MANAGER = "manager"
_SCORE_RE = re.compile(r"(?im)^\s*score\s*[:=]\s*(10|[0-9])(?:\s*/\s*10)?\s*$")
_BLAME_RE = re.compile(r"(?im)^\s*blame\s*[:=]\s*(10|[0-9])(?:\s*/\s*10)?\s*$")


@dataclass(frozen=True)
class RoleGraph:
    roles: tuple[str, ...]          # native order
    edges: tuple[tuple[str, str], ...]  # (sender, receiver)
    kind: str                       # "star" | "chain" | "shared"

    @property
    def terminal(self) -> str:
        return MANAGER if self.kind == "star" else self.roles[-1]

    def ascent_order(self) -> tuple[str, ...]:
        """MASPO's coordinate-ascent order: native order with the terminal role last."""
        return tuple(r for r in self.roles if r != self.terminal) + (self.terminal,)

    def successor(self, role: str) -> str | None:
        """The role that reads `role`'s output next (MASPO lookahead); None for the terminal role."""
        if role == self.terminal:
            return None
        if self.kind == "star":
            return MANAGER
        order = self.roles
        return order[order.index(role) + 1]

    def predecessors(self, role: str) -> tuple[str, ...]:
        return tuple(s for s, r in self.edges if r == role)

    def upstream(self, role: str) -> tuple[str, ...]:
        """Every role whose output reaches `role` (chain: the earlier stages; star: the workers, for the manager)."""
        if self.kind == "chain":
            return self.roles[: self.roles.index(role)]
        return self.predecessors(role)

    def distance_to_terminal(self, role: str) -> int:
        if role == self.terminal:
            return 0
        if self.kind == "star":
            return 1
        return len(self.roles) - 1 - self.roles.index(role)

    def describe(self, role: str) -> str:
        """A topology-aware sentence about where `role` sits (used in blame and proposal prompts)."""
        if self.kind == "shared":
            return f"'{role}' is the only prompt; every member of the team runs it and the team's answer is final."
        ups = ", ".join(self.predecessors(role)) or "none (it reads the task directly)"
        down = self.successor(role)
        tail = "it produces the team's final answer" if down is None else f"its output is read by '{down}'"
        return f"'{role}' sits in a {self.kind} of {len(self.roles)} roles; it reads: {ups}; {tail}."


def role_graph(roles: Sequence[str]) -> RoleGraph:
    order = tuple(roles)
    if len(order) == 1:
        return RoleGraph(order, (), "shared")
    if MANAGER in order:
        star = (MANAGER,) + tuple(r for r in order if r != MANAGER)
        return RoleGraph(star, tuple((w, MANAGER) for w in star[1:]), "star")
    return RoleGraph(order, tuple(zip(order, order[1:])), "chain")


def render_transcript(row: Row, record: RolloutRecord, role_outputs: Mapping[str, str], *, role_chars: int = 1200,
                      problem_chars: int = 2000) -> str:
    """One scored rollout as text: task, each role's last output (native order), final output, score, feedback."""
    parts = [f"## Task\n{head_tail(task_text(row), problem_chars)}"]
    for role, text in role_outputs.items():
        parts.append(f"## Output of '{role}'\n{head_tail(text, role_chars)}")
    parts.append(f"## Final team output\n{output_text(record)}")
    parts.append(f"## Score\n{record.score}\n## Feedback\n{record.feedback or ''}")
    return "\n\n".join(parts)


def parse_score(reply: str) -> int | None:
    """The last 'Score: N' line (N in 0..10) of a judge reply; None when there is none (malformed)."""
    found = _SCORE_RE.findall(reply or "")
    return int(found[-1]) if found else None


def parse_blame(reply: str) -> int | None:
    found = _BLAME_RE.findall(reply or "")
    return int(found[-1]) if found else None


def worst(records: Sequence[RolloutRecord], n: int) -> list[RolloutRecord]:
    """The n lowest-scoring usable records, earliest first among equals."""
    usable = [(s, i, r) for i, r in enumerate(records) if (s := score_of(r)) is not None]
    return [r for _, _, r in sorted(usable, key=lambda t: (t[0], t[1]))[:n]]
