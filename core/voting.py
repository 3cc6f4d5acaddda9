"""Gold-free majority vote over team members (protocol-v1 sections 2.2 and 2.5).

Each member casts a key (the benchmark's `vote_key` of its output); None or blank = abstain. The largest
bucket wins; a tie goes to the bucket containing the lowest member index; the winner is that bucket's lowest
member. If every member abstains, member 0 is selected. Gold is never consulted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class VoteResult:
    selected: int
    keys: tuple[str | None, ...]
    buckets: tuple[tuple[str, tuple[int, ...]], ...]  # (key, members) in order of first appearance
    abstentions: tuple[int, ...]
    winner_key: str | None
    tie: bool  # several buckets shared the largest size

    def summary(self) -> dict[str, Any]:
        """The JSON-able vote record kept in the rollout's output metadata."""
        return {
            "rule": "largest_bucket_then_lowest_member",
            "selected_member": self.selected,
            "winner_key": self.winner_key,
            "buckets": [{"key": key, "members": list(members)} for key, members in self.buckets],
            "abstentions": list(self.abstentions),
            "tie": self.tie,
            "all_abstained": self.winner_key is None,
            "n_members": len(self.keys),
        }


def _cast(key: str | None) -> str | None:
    if key is None:
        return None
    return key if key.strip() else None


def majority_vote(keys: Sequence[str | None]) -> VoteResult:
    """Select a member by the protocol's vote rule. `keys[i]` is member i's key."""
    if not keys:
        raise ValueError("a vote needs at least one member")
    cast = tuple(_cast(k) for k in keys)
    members: dict[str, list[int]] = {}
    abstentions: list[int] = []
    for index, key in enumerate(cast):
        if key is None:
            abstentions.append(index)
        else:
            members.setdefault(key, []).append(index)
    buckets = tuple((key, tuple(ms)) for key, ms in members.items())
    if not buckets:
        return VoteResult(selected=0, keys=cast, buckets=(), abstentions=tuple(abstentions), winner_key=None,
                          tie=False)
    largest = max(len(ms) for _, ms in buckets)
    leaders = [(key, ms) for key, ms in buckets if len(ms) == largest]
    winner_key, winner_members = min(leaders, key=lambda b: b[1][0])
    return VoteResult(selected=winner_members[0], keys=cast, buckets=buckets, abstentions=tuple(abstentions),
                      winner_key=winner_key, tie=len(leaders) > 1)
