"""The splits a job read, re-derived (`run.derivation.splits`: the ordered ids of train, validation and test).

E_IDENTITY_MISMATCH: the job's split_sha256 is not the hash of those ids (core.protocol.split_hash), or its
split_sizes are not their counts. E_ARM_IDS: a validation or test evaluation of the derivation does not hold
exactly its split's ids in the split's order (the final validation and the test run every row of their split).
A card of a job written before splits were recorded carries no `splits`: only the arms' own ids are checked then.
"""

from __future__ import annotations

from typing import Any

from core.protocol import split_hash
from engine.cards.format.problems import Problem

WHERE = "manifest.json:run.derivation.splits"
SPLITS = ("train", "validation", "test")


def split_problems(derivation: dict[str, Any]) -> list[Problem]:
    splits = derivation.get("splits")
    if splits is None:
        return []
    if not isinstance(splits, dict) or not all(isinstance(splits.get(s), list) for s in SPLITS):
        return [Problem("E_IDENTITY_MISMATCH", WHERE, "run.derivation.splits holds no train/validation/test id lists")]
    raw_job = derivation.get("job")
    job: dict[str, Any] = raw_job if isinstance(raw_job, dict) else {}
    out: list[Problem] = []
    if job.get("split_sha256") != split_hash(splits):
        out.append(Problem("E_IDENTITY_MISMATCH", WHERE, f"job split_sha256 {str(job.get('split_sha256'))[:12]} is "
                                                         f"not the hash of the recorded splits ({split_hash(splits)[:12]})"))
    sizes = job.get("split_sizes")
    if isinstance(sizes, dict) and sizes != {s: len(splits[s]) for s in SPLITS}:
        out.append(Problem("E_IDENTITY_MISMATCH", WHERE, f"job split_sizes {sizes} are not the recorded splits' counts"))
    raw = derivation.get("evaluations")
    evaluations: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for evaluation_id, ident in evaluations.items():
        split = (ident or {}).get("split")
        if split in ("validation", "test") and list((ident or {}).get("ordered_example_ids") or []) != splits[split]:
            out.append(Problem("E_ARM_IDS", WHERE, f"evaluation {evaluation_id[:12]} ({split}) does not hold its "
                                                   f"split's {len(splits[split])} ids in order"))
    return out
