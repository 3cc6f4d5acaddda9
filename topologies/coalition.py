"""The one place native topologies honour a coalition mask (core/coalition.py `MemberMask`, protocol-v1 section 7).

The mask reaches a topology on its agent context (`ctx.control`, set by the engine for a masked optimize rollout;
absent on every other context). A topology that claims masks (`member_masks = True` on its class) calls
`centralized_team` (or its own helper here) before it builds its team, and `acknowledge` on its output:

* a masked member sends nothing: it is dropped from the team before the rollout starts, so no request of it exists;
* its output is absent from what others read: it never runs, so nothing of it enters a shared conversation, and
  the members left are not told about it (the manager is offered no delegate tool for it and its name is not listed);
* aggregation with fewer members: centralized, the manager is always present and its final message is the answer,
  as without a mask (every worker masked = the manager alone); sequential, the present stages run in their order,
  each reading the last present stage before it, and the LAST PRESENT stage answers (carries the output contract);
  independent, masked replicas abstain from the majority vote (as a replica past its wall-clock cap does), members
  keep their indices; decentralized, masked peers post nothing in any round, present peers read only each other,
  and the final vote is over the present peers. A mask that leaves nobody to run is an error (the method values that coalition 0).

A topology that does not claim masks refuses a masked rollout with a ContractError (never silently unmasked).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.coalition import CONTROL_KEY, MemberMask, member_name
from core.errors import ContractError
from core.models import AgentOutput
from topologies.teams import CentralizedTeam, Stage

CENTRALIZED_RULE = ("manager always present and answers; masked workers are not offered to it (no delegate tool, "
                    "not named) and never run; every worker masked = the manager alone")
SEQUENTIAL_RULE = ("present stages run in order, each reading the last present stage before it; the last present "
                   "stage answers (carries the output contract); masked stages never run")
INDEPENDENT_RULE = "masked replicas never run and abstain from the majority vote; members keep their indices"
DECENTRALIZED_RULE = ("masked peers never run: they post nothing in any round, the present peers read only each "
                      "other, and the final majority vote is over the present peers")
NATIVE_RUNTIME = "native"


def mask_of(ctx: object) -> MemberMask | None:
    """The rollout's mask, or None (any context without one: evaluation, test, a test's fake)."""
    control = getattr(ctx, "control", None)
    if control is not None and not isinstance(control, MemberMask):
        raise ContractError(f"unknown optimizer control {type(control).__name__}")
    return control


def refuse_mask(ctx: object, topology: str) -> None:
    """For a topology that does not honour masks: a masked rollout is an error, never run unmasked."""
    if mask_of(ctx) is not None:
        raise ContractError(f"topology {topology} does not honour coalition masks (optimizer_control)")


def centralized_team(team: CentralizedTeam, mask: MemberMask | None) -> CentralizedTeam:
    """The team without its masked workers (CENTRALIZED_RULE); the manager cannot be masked."""
    if mask is None:
        return team
    known = {team.manager, *(w.name for w in team.workers)}
    unknown = [role for role in mask.masked if role not in known]
    if unknown or not mask.present(team.manager):
        raise ContractError(f"member mask {list(mask.masked)}: the manager cannot be masked and every masked role "
                            f"must be a worker of the team ({', '.join(sorted(known))})")
    return replace(team, workers=tuple(w for w in team.workers if mask.present(w.name)))


def _check(mask: MemberMask, known: set[str], left: int) -> None:
    unknown = [m for m in mask.masked if m not in known]
    if unknown:
        raise ContractError(f"member mask {list(mask.masked)}: not members of the team: {', '.join(unknown)}")
    if left == 0:
        raise ContractError("member mask leaves nobody to run (the empty coalition is not a rollout here)")


def sequential_stages(stages: tuple[Stage, ...], mask: MemberMask | None) -> tuple[Stage, ...]:
    """The present stages, in order (SEQUENTIAL_RULE)."""
    if mask is None:
        return stages
    kept = tuple(s for s in stages if mask.present(s.role))
    _check(mask, {s.role for s in stages}, len(kept))
    return kept


def present_members(role: str, n: int, mask: MemberMask | None) -> tuple[bool, ...]:
    """Per replica index, whether it runs (INDEPENDENT_RULE)."""
    if mask is None:
        return (True,) * n
    flags = tuple(mask.present(member_name(role, i)) for i in range(n))
    _check(mask, {member_name(role, i) for i in range(n)}, sum(flags))
    return flags


def acknowledge(output: AgentOutput, mask: MemberMask | None, present: tuple[str, ...], rule: str) -> AgentOutput:
    """The output with the runtime's acknowledgement of `mask` in its metadata (unchanged without a mask)."""
    if mask is None:
        return output
    ack: dict[str, Any] = mask.acknowledgement(NATIVE_RUNTIME, present, rule)
    return output.model_copy(update={"metadata": {**output.metadata, CONTROL_KEY: ack}})
