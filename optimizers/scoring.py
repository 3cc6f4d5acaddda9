"""How a method reads scores from RolloutRecords: an unusable rollout is never a score (protocol-v1 section 5.3).

Protocol 5.3: a rollout is usable when it is a `success` or a `semantic_failure` (a wrong or malformed answer
scores 0 and counts); an `infrastructure_failure` is an exception before a scored observation, so it carries no
score at all. Rows a method asks for past the spent ledger come back budget-exhausted (uncharged, not executed):
they are no observation either. So every method reads scores through this module, and only here:

- `score_of(record)`: the 0/1 score of a usable record, None for an unusable one (never 0).
- `usable_mean(records)`: the mean over the usable records; its denominator (`usable`) and the rows it was taken
  over (`rows`) travel with it, so whoever reports the mean states them. No usable record: `value` is None and the
  candidate is *not comparable* (it is neither better nor worse than anything; it never becomes an incumbent).
- `paired_scores(a, b)`: the items where BOTH of two paired batches (same rows, same seeds: parent and child,
  reference and member) are usable; a comparison between two candidates is made on those items only, so an
  infrastructure failure of either side drops the item from both sums instead of counting as a loss or a win.

The rule per method (docstrings of each method say where it applies):
  gepa   validation means and Pareto fronts over usable validation rows; minibatch and merge-screen comparisons
         over paired usable rows; no usable pair = the child is rejected as not comparable
  mipro  a trial's score = mean over its usable validation rows; a trial with none is not told to the sampler and
         cannot become the incumbent; bootstrapped demos come from `success` records only
  mapro  a train pass's mean over its usable rows; a pass with none is not comparable (no incumbent change, counts
         toward patience); transcripts, blame, rewrites and demos use usable records only
  maspo  global credit (win/tie/loss against the parent) over paired usable items; local / lookahead judging only
         on those items; an offspring with no usable pair is not comparable and never enters the beam
A seed bundle that is itself not comparable (every rollout of its first evaluation an infrastructure failure)
leaves nothing to compare against: the method raises core.errors.InfrastructureInvalidError, the job keeps the
seed bundle and reports the optimization infrastructure-invalid (healable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.models import RolloutRecord


def score_of(record: RolloutRecord) -> float | None:
    """The record's score when it is usable (a usable record always carries its 0/1 score), else None."""
    if not record.usable:
        return None
    return 0.0 if record.score is None else float(record.score)


@dataclass(frozen=True)
class UsableMean:
    value: float | None  # None: no usable record, not comparable
    usable: int          # the denominator
    rows: int            # records the mean was taken over (usable + unusable)

    @property
    def comparable(self) -> bool:
        return self.value is not None

    def as_json(self) -> dict[str, Any]:
        return {"mean": self.value, "usable": self.usable, "rows": self.rows}


def usable_mean(records: Sequence[RolloutRecord]) -> UsableMean:
    scores = [s for s in map(score_of, records) if s is not None]
    return UsableMean(sum(scores) / len(scores) if scores else None, len(scores), len(records))


def usable_scores(records: Sequence[RolloutRecord]) -> dict[str, float]:
    """example id -> score, usable records only (the per-instance scores a Pareto front is built from)."""
    out = {}
    for rec in records:
        s = score_of(rec)
        if s is not None:
            out[rec.example_id] = s
    return out


def paired_scores(a: Sequence[RolloutRecord], b: Sequence[RolloutRecord]) -> list[tuple[float, float]]:
    """(score in a, score in b) for each position where both records are usable, in order."""
    out = []
    for ra, rb in zip(a, b, strict=True):
        sa, sb = score_of(ra), score_of(rb)
        if sa is not None and sb is not None:
            out.append((sa, sb))
    return out
