"""The selection decision re-derived from the card (E_SELECTION_MISMATCH): core.selection.decide over the final
validation rollouts of the seed and incumbent arms (position order, current status and score), with the
optimization's reportability (status completed, nothing reserved in its closing budget), its infrastructure
invalidity and the incumbent bundle's validity, under the protocol's rule (deploy only if strictly better; a tie,
a regression, an unusable record such as a validation infrastructure failure, unpaired ids or an invalid
optimization keep the seed). Compared with the selection.sealed mutation, the derivation's selection payload and
the run block."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from core.canonical import canonical_json
from core.models import RolloutRecord, RolloutStatus
from core.selection import decide, forbidden_metadata
from engine.cards.format.problems import Problem
from engine.cards.format.rollouts import Index, arm

WHERE = "manifest.json:run.derivation.selection"


def _records(idx: Index, evaluation_id: Any) -> list[RolloutRecord] | None:
    if not isinstance(evaluation_id, str):
        return None
    out = []
    for r in sorted(arm(idx, evaluation_id), key=lambda r: str(r.payload.get("position")).zfill(9)):
        p = r.payload
        try:
            out.append(RolloutRecord(rollout_id=r.node, example_id=str(p.get("example_id")), phase="validation",
                                     status=RolloutStatus(p.get("status")), score=r.score, request_seed=int(p.get("request_seed") or 0),
                                     bundle_sha256=str(p.get("bundle_sha256")), attempts=int(p.get("attempts") or 1),
                                     budget_exhausted=bool(p.get("budget_exhausted"))))
        except (ValidationError, TypeError, ValueError):
            return None
    return out


def selection_problems(idx: Index, run: dict[str, Any], derivation: dict[str, Any]) -> list[Problem]:
    selection = derivation.get("selection")
    validation = idx.phases.get("validation")
    optimization = run.get("optimization")
    if not isinstance(selection, dict) or validation is None or not isinstance(optimization, dict):
        return []
    new = validation.row.get("new_value") or {}
    seed_records = _records(idx, new.get("baseline_evaluation_id"))
    if seed_records is None:
        return [Problem("E_SELECTION_MISMATCH", validation.where, "the seed bundle's validation arm is unreadable")]
    optimize = idx.phases.get("optimize")
    reserved = ((optimize.row.get("new_value") or {}).get("budget") or {}).get("reserved") if optimize else 0
    seed_bundle, incumbent = selection.get("seed_bundle") or {}, selection.get("incumbent_bundle") or {}
    incumbent_valid = set(incumbent.get("roles") or {}) == set(seed_bundle.get("roles") or {}) and not \
        forbidden_metadata(incumbent.get("metadata") or {})
    decision = decide(ordered_ids=list(selection.get("ordered_validation_ids") or []), seed_records=seed_records,
                      incumbent_records=_records(idx, new.get("candidate_evaluation_id")),
                      optimization_reportable=optimization.get("status") == "completed" and reserved == 0,
                      optimization_infra_invalid=optimization.get("failure_kind") == "infrastructure_invalid",
                      incumbent_valid=incumbent_valid) if _decidable(idx, new) else None
    if decision is None:
        return [Problem("E_SELECTION_MISMATCH", validation.where, "the incumbent's validation arm is unreadable")]
    derived = {"selected_candidate": decision.selected_candidate, "fallback_reason": decision.fallback_reason}
    claims: dict[str, dict[str, Any]] = {WHERE: {**{k: selection.get(k) for k in derived},
                                                 "baseline_validation_score": selection.get(
                                                     "baseline_validation_score"),
                                                 "incumbent_validation_score": selection.get(
                                                     "incumbent_validation_score")}}
    if idx.selection is not None:
        claims[idx.selection.where] = {k: (idx.selection.row.get("new_value") or {}).get(k) for k in derived}
    if isinstance(run.get("selection"), dict):
        claims["manifest.json:run.selection"] = {k: run["selection"].get(k) for k in derived}
    derived_all = {**derived, "baseline_validation_score": decision.baseline_score,
                   "incumbent_validation_score": decision.incumbent_score}
    out = []
    for where, claim in claims.items():
        wrong = [k for k in claim if canonical_json(claim[k]) != canonical_json(derived_all[k])]
        if wrong:
            out.append(Problem("E_SELECTION_MISMATCH", where, f"{', '.join(wrong)} recorded as "
                                                              f"{[claim[k] for k in wrong]} but the validation "
                                                              f"rollouts decide {[derived_all[k] for k in wrong]}"))
    return out


def _decidable(idx: Index, new: dict[str, Any]) -> bool:
    candidate = new.get("candidate_evaluation_id")
    return candidate is None or _records(idx, candidate) is not None
