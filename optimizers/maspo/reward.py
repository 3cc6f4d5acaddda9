"""MASPO's joint reward (protocol 8.4), pure arithmetic.

    non-terminal role with a successor pair:  R = 0.4 * local + 0.4 * lookahead + 0.2 * global - 0.5
    no successor pair (fallback):             R = 0.7 * local + 0.3 * global - 0.5
    terminal role, or a shared-prompt team:   R = global - 0.5
    beam refresh at a role revisit:           R = 0.7 * local + 0.3 * global - 0.5  (terminal/shared: global - 0.5)

local / lookahead = mean pairwise-judge verdict for the candidate (win 1, tie 0.5, loss 0; a malformed judge reply
is a loss) on the role's own output / its successor's output; global = mean dataset-metric outcome against the
parent rollout on the same item and seed (win 1, tie 0.5, loss 0). A candidate identical to its parent ties
everywhere: R = 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_WINNER_RE = re.compile(r"(?im)^\s*winner\s*[:=]\s*(A|B|TIE)\s*$")


@dataclass(frozen=True)
class Reward:
    value: float
    rule: str  # "joint" | "fallback" | "terminal" | "shared" | "refresh"
    local: float | None
    lookahead: float | None
    global_: float


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def outcome(candidate_score: float, parent_score: float) -> float:
    """Dataset-metric win / tie / loss of the candidate against the parent on one item."""
    return 1.0 if candidate_score > parent_score else 0.5 if candidate_score == parent_score else 0.0


def verdict(reply: str, candidate_is: str) -> float:
    """The candidate's value from one A/B judge reply (`Winner: A|B|TIE`, last such line); malformed = loss."""
    found = _WINNER_RE.findall(reply or "")
    if not found:
        return 0.0
    winner = found[-1].upper()
    return 0.5 if winner == "TIE" else 1.0 if winner == candidate_is else 0.0


def joint_reward(*, local: float | None, lookahead: float | None, global_: float, terminal: bool,
                 shared: bool) -> Reward:
    if shared:
        return Reward(global_ - 0.5, "shared", None, None, global_)
    if terminal:
        return Reward(global_ - 0.5, "terminal", None, None, global_)
    loc = 0.0 if local is None else local  # no judged item: every verdict counts as a loss
    if lookahead is None:
        return Reward(0.7 * loc + 0.3 * global_ - 0.5, "fallback", loc, None, global_)
    return Reward(0.4 * loc + 0.4 * lookahead + 0.2 * global_ - 0.5, "joint", loc, lookahead, global_)


def refresh_reward(*, local: float | None, global_: float, terminal: bool, shared: bool) -> Reward:
    if shared or terminal:
        return Reward(global_ - 0.5, "refresh", None, None, global_)
    loc = 0.0 if local is None else local
    return Reward(0.7 * loc + 0.3 * global_ - 0.5, "refresh", loc, None, global_)
