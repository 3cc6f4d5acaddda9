"""Every model call's attribution agrees with itself and with its seed.

E_ATTRIBUTION: a call's agent is named three times: its payload (`role`, `member`, `turn`), its
`worker_binding_key` (`role.member`) and its turn node (`<attempt execution>/<role.member>/t<turn>`, also its
`turn_id`). A call re-attributed to another agent must change all three consistently, and then its request seed
gives it away: under the condition's member seed scheme a call's seed is derived from its rollout's request seed
and its role, member and turn (core.seeds.turn_seed), so a call moved to another member or turn carries a seed that
is not its own (E_ARM_SEED). Evaluation arms are checked with their paired seeds (engine.cards.format.arms); this
module checks the optimize rollouts' calls against the request seed each rollout claims.
"""

from __future__ import annotations

from typing import Any

from core.seeds import TURN_HASH_SCHEME
from engine.cards.format.arms import call_seed_problems
from engine.cards.format.lines import Located
from engine.cards.format.problems import Problem
from engine.cards.format.rollouts import Index


def _named(row: dict[str, Any]) -> str | None:
    """What is wrong with one call's names (None when they agree or the call names no agent)."""
    p = row.get("payload") or {}
    role, member, turn = p.get("role"), p.get("member"), p.get("turn")
    if not (isinstance(role, str) and isinstance(member, int) and isinstance(turn, int)):
        return None
    key = f"{role}.{member}"
    if row.get("worker_binding_key") != key:
        return f"payload names agent {key!r} but worker_binding_key is {row.get('worker_binding_key')!r}"
    node = f"{row.get('task_execution_id')}/{key}/t{turn}"
    if row.get("node_id") != node or row.get("turn_id") != node:
        return f"agent {key!r} turn {turn} belongs to node {node!r}, recorded as {row.get('node_id')!r}"
    return None


def attribution_problems(rows: dict[str, list[Located]], idx: Index, condition: dict[str, Any] | None
                         ) -> list[Problem]:
    out: list[Problem] = []
    for loc in rows.get("events", []):
        if loc.row.get("event_type") == "model_call":
            wrong = _named(loc.row)
            if wrong is not None:
                out.append(Problem("E_ATTRIBUTION", loc.where, f"model call {loc.row.get('event_id')!r}: {wrong}"))
    if condition is None:  # no run.derivation: the member seed scheme is not known
        return out
    scheme = str(condition.get("member_seed_scheme", TURN_HASH_SCHEME))
    for r in idx.rollouts.values():
        seed = r.payload.get("request_seed")
        if r.payload.get("phase") == "optimize" and isinstance(seed, int) and not isinstance(seed, bool):
            out += call_seed_problems(r, seed, scheme)
    return out
