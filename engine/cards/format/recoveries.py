"""Recoveries against what they supersede (engine.job.recovery writes them).

E_RECOVERY_UNFOUNDED: a `job.recovery` mutation is the one record that lets a phase summary be replaced (the
recomputation then checks the later summary instead), so a forger could shield a forged summary behind a fake one.
A recovery stands only on its evidence, recorded before it:

- each of its reasons names failures the card holds: "optimization ..." an optimize rollout claimed as an
  infrastructure failure, "evaluation <id> holds infrastructure failures" a rollout of that evaluation so claimed
  (annotations keep every claim, so a rollout attempted again still shows the failure it had);
- each phase summary it supersedes (a phase.completed before it with a later one of the same phase) is of an
  artifact it moved aside: optimize -> optimization.json, validation -> selection.json, test -> test.json.
"""

from __future__ import annotations

import re
from typing import Any

from engine.cards.format.lines import Located
from engine.cards.format.problems import Problem

ARTIFACT = {"optimize": "optimization.json", "validation": "selection.json", "test": "test.json"}
EVALUATION_REASON = re.compile(r"^evaluation (?P<id>[0-9a-f]+) holds infrastructure failures$")


def _failures_set_at(rows: dict[str, list[Located]]) -> list[tuple[int, dict[str, Any]]]:
    """(position in mutations.jsonl of its annotation.set, payload) of every mpb.rollout claim of an
    infrastructure failure, current or superseded."""
    claims = {(str(a.row.get("target_id")), a.row.get("sequence")): a.row.get("payload") or {}
              for a in rows.get("annotations", []) if a.row.get("namespace") == "mpb.rollout"
              and (a.row.get("payload") or {}).get("status") == "infrastructure_failure"}
    out = []
    for at, loc in enumerate(rows.get("mutations", [])):
        new = loc.row.get("new_value") or {}
        if loc.row.get("mutation_type") == "annotation.set" and new.get("namespace") == "mpb.rollout":
            payload = claims.get((str(loc.row.get("target_id")), new.get("sequence")))
            if payload is not None:
                out.append((at, payload))
    return out


def _founded(reason: Any, before: list[dict[str, Any]]) -> bool:
    if not isinstance(reason, str):
        return False
    if reason.startswith("optimization "):
        return any(p.get("phase") == "optimize" for p in before)
    match = EVALUATION_REASON.match(reason)
    return match is not None and any(p.get("evaluation_id") == match["id"] for p in before)


def recovery_problems(rows: dict[str, list[Located]]) -> list[Problem]:
    mutations = rows.get("mutations", [])
    recoveries = [at for at, m in enumerate(mutations) if m.row.get("mutation_type") == "job.recovery"]
    if not recoveries:
        return []
    failures = _failures_set_at(rows)
    completed = [(at, (m.row.get("new_value") or {}).get("phase")) for at, m in enumerate(mutations)
                 if m.row.get("mutation_type") == "phase.completed"]
    out: list[Problem] = []
    for at in recoveries:
        loc = mutations[at]
        new = loc.row.get("new_value") or {}
        reasons, moved = new.get("reasons"), new.get("moved")
        before = [p for set_at, p in failures if set_at < at]
        if not isinstance(reasons, list) or not reasons or not isinstance(moved, list):
            out.append(Problem("E_RECOVERY_UNFOUNDED", loc.where, "job.recovery names no reasons or moved artifacts"))
            continue
        unfounded = [r for r in reasons if not _founded(r, before)]
        if unfounded:
            out.append(Problem("E_RECOVERY_UNFOUNDED", loc.where, f"job.recovery reason(s) {unfounded} name "
                                                                  "infrastructure failures no earlier claim records"))
        previous = max((r for r in recoveries if r < at), default=-1)
        for done_at, phase in completed:
            later = any(p == phase and a > at for a, p in completed)
            if previous < done_at < at and later and ARTIFACT.get(str(phase)) not in moved:
                out.append(Problem("E_RECOVERY_UNFOUNDED", loc.where, f"job.recovery supersedes the {phase} "
                                                                      f"summary ({mutations[done_at].where}) but did "
                                                                      f"not set {ARTIFACT.get(str(phase))} aside"))
    return out
