"""`card validate` = re-derive: the checks that recompute identities, arms, the selection decision, the prompts
sent, request keys, call attribution, failures, the optimize budget, recoveries, time order, usage and conformance from the card alone (format 1.2 cards of a
job carry `run.derivation`; a 1.2 job card without it is E_IDENTITY_MISMATCH). Pure over blob-resolved rows."""

from __future__ import annotations

from typing import Any

from core.canonical import canonical_json
from engine.cards.format.arms import arm_problems, identity_problems
from engine.cards.format.attribution import attribution_problems
from engine.cards.format.decisions import selection_problems
from engine.cards.format.failures import budget_problems, failure_problems
from engine.cards.format.lines import Located
from engine.cards.format.model import REDACTED_KEY
from engine.cards.format.problems import Problem
from engine.cards.format.prompts_sent import prompt_problems
from engine.cards.format.recoveries import recovery_problems
from engine.cards.format.request_keys import request_key_problems
from engine.cards.format.rollouts import index
from engine.cards.format.splits import split_problems
from engine.cards.format.timeline import conformance_problems, time_problems, usage_problems

BUNDLE_REF = "$bundle"  # run.derivation names bundles by digest; their texts are the bundles.jsonl records
BUNDLE_KEYS = ("seed_bundle", "incumbent_bundle", "deployed_bundle")


def inflate(payload: Any, records: dict[str, dict[str, Any]]) -> Any:
    """The payload with each bundle reference replaced by its record's fields; None when a record is absent."""
    if not isinstance(payload, dict):
        return payload
    out = dict(payload)
    for key in BUNDLE_KEYS:
        ref = payload.get(key)
        if isinstance(ref, dict) and BUNDLE_REF in ref:
            record = records.get(str(ref[BUNDLE_REF]))
            if record is None:
                return None
            out[key] = {k: record.get(k) for k in ("bundle_sha256", "demos", "metadata", "roles")}
    return out


def derived_problems(run: dict[str, Any], rows: dict[str, list[Located]], bundle_rows: list[Located],
                     requires_derivation: bool) -> list[Problem]:
    idx = index(rows)
    problems = failure_problems(idx) + budget_problems(idx) + time_problems(rows) + usage_problems(idx)
    problems += recovery_problems(rows) + request_key_problems(rows)
    derivation = run.get("derivation")
    problems += conformance_problems(run, derivation if isinstance(derivation, dict) else None, idx)
    if not isinstance(derivation, dict):
        problems += attribution_problems(rows, idx, None)
        if requires_derivation and run.get("job_sha256") is not None:
            problems.append(Problem("E_IDENTITY_MISMATCH", "manifest.json:run", "a job card of format 1.2 carries "
                                                                                "no run.derivation"))
        return problems
    condition = (derivation.get("job") or {}).get("condition") or {}
    problems += attribution_problems(rows, idx, condition if isinstance(condition, dict) else None)
    records = {str(loc.row.get("bundle_sha256")): loc.row for loc in bundle_rows}
    job, selection = inflate(derivation.get("job"), records), inflate(derivation.get("selection"), records)
    hashable = job is not None and (selection is not None or derivation.get("selection") is None) \
        and REDACTED_KEY not in canonical_json([job, selection])  # bundle texts a redaction removed
    derivation = {**derivation, "job": job if job is not None else derivation.get("job"),
                  "selection": selection if selection is not None else derivation.get("selection")}
    problems += identity_problems(run, derivation, hashable=hashable)
    problems += arm_problems(idx, derivation)
    problems += split_problems(derivation)
    problems += selection_problems(idx, run, derivation)
    problems += prompt_problems(idx, bundle_rows, condition.get("output_contract_version"))
    return problems
