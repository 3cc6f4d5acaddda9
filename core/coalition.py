"""Coalition masking (protocol-v1 section 7, `optimizer_control`): a typed member mask a rollout carries.

A method that evaluates coalitions of a team (HiveMind, section 8.5) runs a rollout with a `MemberMask`: the roles
it names in `masked` take no part in it. The mask travels with the rollout (the optimizer seam's `control=`), never
inside the prompt bundle, and only in the optimize phase: the engine refuses a mask anywhere else, so it never
reaches final validation or test. A runtime that honours masks (topologies/coalition.py) acknowledges every masked
rollout in its output metadata under `CONTROL_KEY`; the engine rejects a masked rollout that was not acknowledged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTROL_KEY = "optimizer_control"  # the acknowledgement's key in a rollout's topology metadata and its record


@dataclass(frozen=True)
class MemberMask:
    """The roles masked out of one rollout (sorted, distinct); an empty mask is the full team."""

    masked: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "masked", tuple(sorted(set(self.masked))))

    def present(self, role: str) -> bool:
        return role not in self.masked

    def as_json(self) -> dict[str, Any]:
        return {"kind": "member_mask", "masked": list(self.masked)}

    def acknowledgement(self, runtime: str, present: tuple[str, ...], rule: str) -> dict[str, Any]:
        """What a runtime writes when it honoured this mask: who ran, who was masked, the rule it applied."""
        return {**self.as_json(), "acknowledged": True, "runtime": runtime, "present": list(present), "rule": rule}


OptimizerControl = MemberMask  # the one kind of optimizer control protocol v1 knows


def member_name(role: str, member: int) -> str:
    """A replica's player name in a topology whose members share one role (independent, decentralized)."""
    return f"{role}#{member}"


@dataclass(frozen=True)
class CoalitionGame:
    """The coalition game a topology offers a method that masks members (declared by the topology's
    `coalition_game(task, team_size)`): `players` the maskable members (role names, or `member_name`s of
    replicas), `anchor` the role always present (centralized: the manager; None: every member can be masked),
    `empty_runs` whether the empty coalition is a rollout (centralized: the anchor alone) or, with nobody to run,
    worth 0 without one."""

    players: tuple[str, ...]
    anchor: str | None = None
    empty_runs: bool = False

    @staticmethod
    def role_of(player: str) -> str:
        return player.split("#", 1)[0]
