"""The final-validation decision (protocol-v1 sections 5.2 and 6): deploy the incumbent only if its mean on the
full validation split is strictly higher than the seed bundle's, with paired seeds; otherwise keep the seed
bundle with a fallback reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from core.models import RolloutRecord

FORBIDDEN_METADATA_KEYS = frozenset({"test_ids", "test_examples", "test_score", "held_out_test", "test_predictions",
                                     "official_evaluation_ids"})


@dataclass(frozen=True)
class Decision:
    selected_candidate: str  # "incumbent" | "seed"
    fallback_reason: str | None
    baseline_score: float | None
    incumbent_score: float | None

    @property
    def validation_delta(self) -> float | None:
        if self.baseline_score is None or self.incumbent_score is None:
            return None
        return self.incumbent_score - self.baseline_score


def _check(records: Sequence[RolloutRecord], ids: Sequence[str]) -> str | None:
    seen: set[str] = set()
    for rec in records:
        if rec.example_id in seen:
            return f"duplicate_example:{rec.example_id}"
        seen.add(rec.example_id)
    if [r.example_id for r in records] != list(ids):
        return "unpaired_validation_ids"
    for rec in records:
        if not rec.usable:
            return f"invalid_record:{rec.example_id}:{rec.status.value}"
        if rec.score is None or not 0.0 <= rec.score <= 1.0:
            return f"score_out_of_range:{rec.example_id}"
    return None


def mean_score(records: Sequence[RolloutRecord]) -> float:
    return sum(float(r.score or 0.0) for r in records) / len(records)


def decide(*, ordered_ids: Sequence[str], seed_records: Sequence[RolloutRecord],
           incumbent_records: Sequence[RolloutRecord] | None, optimization_reportable: bool,
           optimization_infra_invalid: bool, incumbent_valid: bool) -> Decision:
    """A forced fallback nulls only the incumbent score (and so the delta); the seed bundle's validation score is
    kept whenever its own records are complete and paired."""
    base = mean_score(seed_records) if ordered_ids and _check(seed_records, ordered_ids) is None else None
    if optimization_infra_invalid or not optimization_reportable:
        return Decision("seed", "infrastructure_invalid_optimization", base, None)
    if not incumbent_valid:
        return Decision("seed", "invalid_incumbent_bundle", base, None)
    if not ordered_ids:
        return Decision("seed", "empty_validation", None, None)
    assert incumbent_records is not None
    for records in (seed_records, incumbent_records):
        problem = _check(records, ordered_ids)
        if problem is not None:
            return Decision("seed", problem, base, None)
    assert base is not None
    inc = mean_score(incumbent_records)
    if inc > base:
        return Decision("incumbent", None, base, inc)
    return Decision("seed", "validation_tie" if inc == base else "validation_regression", base, inc)


def forbidden_metadata(metadata: dict) -> list[str]:
    """Keys in a bundle's metadata that would leak test information."""
    found = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k in FORBIDDEN_METADATA_KEYS:
                    found.append(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(metadata)
    return sorted(set(found))
