"""Failures re-derived from their evidence.

E_FAILURE_KIND: a rollout recorded usable (success, semantic_failure) whose claimed final attempt holds an
errored model call: that attempt ended in an infrastructure failure (protocol section 5.3), so the record cannot
be a scored observation.
E_ATTEMPT_COUNT: the rollout's current generation holds model calls of an attempt beyond the count it claims (its
answer may have come from an attempt the record hides).
E_BUDGET_MISMATCH: the optimize phase's closing budget differs from what its rollouts give: successful and
semantic failures = the charged rollouts by status, charged = their sum, infrastructure_failures = retries = the
failed attempts (every attempt of an infrastructure-failed rollout, all but the last of a usable one), attempted =
charged + infrastructure failures, remaining = maximum - charged, reserved = 0. After a recovery by re-running
(a job.recovery before the phase completed), the budget is the re-run's: the rollouts its ledger committed after
the recovery (run again, or replayed from the store: a `ledger.committed` marked replayed); the others belong to the
optimization it set aside.
"""

from __future__ import annotations

from typing import Any

from engine.cards.format.problems import Problem
from engine.cards.format.rollouts import Index

USABLE = ("success", "semantic_failure")


def failure_problems(idx: Index) -> list[Problem]:
    out: list[Problem] = []
    for r in idx.rollouts.values():
        p = r.payload
        claimed = p.get("attempts")
        if not isinstance(claimed, int) or p.get("budget_exhausted"):
            continue
        generation = r.latest_generation()
        beyond = sorted(a for a in generation if a > claimed)
        if beyond:
            out.append(Problem("E_ATTEMPT_COUNT", r.claim.where, f"rollout {r.node!r} claims {claimed} attempt(s) "
                                                                 f"but its events hold attempt(s) {beyond}"))
        final = generation.get(claimed, [])
        if p.get("status") in USABLE and any((e.row.get("payload") or {}).get("error") is not None for e in final):
            out.append(Problem("E_FAILURE_KIND", r.claim.where, f"rollout {r.node!r} is recorded {p.get('status')}"
                                                                f" but its final attempt {claimed} has an errored "
                                                                "model call (an infrastructure failure)"))
    return out


def budget_problems(idx: Index) -> list[Problem]:
    loc = idx.phases.get("optimize")
    budget = ((loc.row.get("new_value") or {}).get("budget") if loc is not None else None)
    if not isinstance(budget, dict):
        return []
    counts = {"successful": 0, "semantic_failures": 0, "infrastructure_failures": 0}
    recovery = idx.recovered_before("optimize")
    for r in idx.rollouts.values():
        p = r.payload
        raw = p.get("attempts")
        attempts: int = raw if isinstance(raw, int) else 1
        if p.get("phase") != "optimize" or p.get("budget_exhausted"):
            continue
        if idx.ledger_at.get(r.node, -1) < recovery:
            continue  # set aside by the recovery
        if p.get("charged") and p.get("status") == "success":
            counts["successful"] += 1
        elif p.get("charged") and p.get("status") == "semantic_failure":
            counts["semantic_failures"] += 1
        counts["infrastructure_failures"] += attempts if p.get("status") not in USABLE else attempts - 1
    charged = counts["successful"] + counts["semantic_failures"]
    derived: dict[str, Any] = {**counts, "charged": charged, "retries": counts["infrastructure_failures"],
                               "attempted": charged + counts["infrastructure_failures"], "reserved": 0}
    if isinstance(budget.get("maximum"), int):
        derived["remaining"] = budget["maximum"] - charged
    wrong = [k for k in derived if k in budget and budget[k] != derived[k]]
    if not wrong:
        return []
    return [Problem("E_BUDGET_MISMATCH", loc.where if loc else "mutations.jsonl",
                    f"optimize budget {', '.join(wrong)} recorded as {[budget[k] for k in wrong]} but its rollouts "
                    f"give {[derived[k] for k in wrong]}")]
