"""What a job card's identity and decisions are derived from (`manifest.run.derivation`, format 1.2): the job
identity's payload (cell, condition, split hash, optimizer seed, seed bundle, endpoint self-reports), the sealed
selection's payload, and each evaluation identity's own fields (split, evaluation seed, bundle digest, ordered
example ids, rows hash; the condition is the job's), and the ordered ids of every split (splits.json: what the
split hash is derived from). `card validate` recomputes condition_id, job_sha256,
cell-independent evaluation ids, selection_id, the paired seeds, the arms and the selection decision from these
(engine.cards.format.derive)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.errors import ArtifactError
from engine.cards.format.derive import BUNDLE_KEYS, BUNDLE_REF

EVALUATION_FIELDS = ("split", "evaluation_seed", "bundle_sha256", "ordered_example_ids", "rows_sha256")


def read_object(path: Path) -> dict[str, Any] | None:
    """A run directory's JSON artifact as an object: None when absent (or not an object); unreadable JSON is an
    ArtifactError."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path} is not readable JSON: {exc}") from exc
    return value if isinstance(value, dict) else None


def derivation(run_dir: Path) -> dict[str, Any] | None:
    """None for a run directory without job.json (a bare store)."""
    job = read_object(run_dir / "job.json")
    if job is None:
        return None
    selection = read_object(run_dir / "selection.json")
    test = read_object(run_dir / "test.json") or {}
    wanted = [] if selection is None else [selection.get("baseline_validation_id"),
                                           selection.get("candidate_validation_id")]
    wanted += [test.get("baseline_evaluation_id"), test.get("deployed_evaluation_id")]
    evaluations: dict[str, Any] = {}
    for evaluation_id in wanted:
        if not isinstance(evaluation_id, str) or evaluation_id in evaluations:
            continue
        record = read_object(run_dir / "evaluations" / f"{evaluation_id}.json")
        identity = (record or {}).get("identity")
        if isinstance(identity, dict):
            evaluations[evaluation_id] = {k: identity.get(k) for k in EVALUATION_FIELDS}
    splits = read_object(run_dir / "splits.json")  # absent in a job directory written before it was recorded
    return {"job": _refs({k: v for k, v in job.items() if k != "sha256"}),
            "selection": None if selection is None else _refs({k: v for k, v in selection.items() if k != "sha256"}),
            "evaluations": evaluations, **({"splits": splits} if splits is not None else {})}


def _refs(payload: dict[str, Any]) -> dict[str, Any]:
    """Bundles by reference (`{"$bundle": digest}`): their texts live once, in bundles.jsonl, where a redaction
    of the prompts reaches them."""
    return {k: {BUNDLE_REF: v["bundle_sha256"]} if k in BUNDLE_KEYS and isinstance(v, dict) else v
            for k, v in payload.items()}

