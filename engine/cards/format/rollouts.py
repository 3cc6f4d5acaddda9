"""A read-only index of a card's rollouts for the re-derivation checks: each rollout node's current `mpb.rollout`
and `mpb.score` annotations, its model calls grouped by (generation, attempt), and the last un-superseded
phase.completed mutation of each phase. Built once per validation over blob-resolved rows."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from engine.cards.format.integrity import EXECUTION
from engine.cards.format.lines import Located

Rows = dict[str, list[Located]]


@dataclass
class Rollout:
    node: str
    claim: Located
    score: float | None = None
    calls: dict[int, dict[int, list[Located]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))

    @property
    def payload(self) -> dict[str, Any]:
        value = self.claim.row.get("payload")
        return value if isinstance(value, dict) else {}

    def latest_generation(self) -> dict[int, list[Located]]:
        return self.calls[max(self.calls)] if self.calls else {}


@dataclass
class Index:
    rollouts: dict[str, Rollout]
    phases: dict[str, Located]  # phase -> its last phase.completed mutation
    selection: Located | None  # the last selection.sealed mutation
    # position in mutations.jsonl of: each rollout's last ledger.committed (written when it ran and when a resumed
    # run replayed it), each phase's last phase.completed, and every job.recovery (a re-run that set artifacts aside)
    ledger_at: dict[str, int] = field(default_factory=dict)
    phase_at: dict[str, int] = field(default_factory=dict)
    recoveries: list[int] = field(default_factory=list)

    def recovered_before(self, phase: str) -> int:
        """The position of the last job.recovery before `phase` last completed (-1 if none): a rollout the ledger
        did not commit after it belongs to the run it set aside."""
        end = self.phase_at.get(phase, -1)
        return max((at for at in self.recoveries if at < end), default=-1)


def _latest(annotations: list[Located], namespace: str) -> dict[str, Located]:
    out: dict[str, Located] = {}
    for loc in annotations:
        r = loc.row
        if r.get("namespace") == namespace and r.get("target_type") == "node":
            target = str(r.get("target_id"))
            if target not in out or int(r.get("sequence") or 0) >= int(out[target].row.get("sequence") or 0):
                out[target] = loc
    return out


def index(rows: Rows) -> Index:
    claims = _latest(rows.get("annotations", []), "mpb.rollout")
    scores = _latest(rows.get("annotations", []), "mpb.score")
    rollouts = {node: Rollout(node, loc) for node, loc in claims.items()}
    for node, loc in scores.items():
        value = (loc.row.get("payload") or {}).get("value")
        if node in rollouts and isinstance(value, (int, float)) and not isinstance(value, bool):
            rollouts[node].score = float(value)
    for loc in rows.get("events", []):
        if loc.row.get("event_type") != "model_call":
            continue
        match = EXECUTION.match(str(loc.row.get("task_execution_id")))
        if match and match["rollout"] in rollouts:
            rollouts[match["rollout"]].calls[int(match["generation"])][int(match["attempt"])].append(loc)
    phases: dict[str, Located] = {}
    selection = None
    idx = Index(rollouts, phases, None)
    for at, loc in enumerate(rows.get("mutations", [])):
        kind, new = loc.row.get("mutation_type"), loc.row.get("new_value") or {}
        if kind == "phase.completed" and isinstance(new.get("phase"), str):
            phases[new["phase"]] = loc
            idx.phase_at[new["phase"]] = at
        elif kind == "selection.sealed":
            selection = loc
        elif kind == "job.recovery":
            idx.recoveries.append(at)
        elif kind == "ledger.committed" and isinstance(new.get("rollout"), str):
            idx.ledger_at[new["rollout"]] = at
    idx.selection = selection
    return idx


def arm(idx: Index, evaluation_id: str) -> list[Rollout]:
    """The rollouts that claim this evaluation, in the order their nodes were first annotated."""
    return [r for r in idx.rollouts.values() if r.payload.get("evaluation_id") == evaluation_id]
