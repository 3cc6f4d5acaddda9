"""TAVO's gate and stop rules (protocol 8.8), pure arithmetic.

- the fixed train batch: TRAIN_BATCH (6) rows, sampled once with Random(233 + s);
- the validation batch: max(3, (B - 5 * 6) // 6) rows, capped at the split (50 at B = 600 with 50 validation
  rows), scored once for the seed (charged) and once per candidate, on the same rows and paired seeds;
- a candidate is adopted only if its validation score >= seed score + 0.01 AND not below the best adopted score;
- a rejected round gets one retry (2 attempts per round); 2 consecutive rejected rounds stop (`patience`);
  at most 5 outer rounds (`max_rounds`); an attempt starts only if its train + validation rollouts fit the
  remaining budget (`budget`).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.vocabulary import StopReason

TRAIN_BATCH = 6
MAX_ROUNDS = 5
ATTEMPTS_PER_ROUND = 2
MAX_CONSECUTIVE_REJECTIONS = 2
MARGIN = 0.01
_EPS = 1e-9  # 0.51 >= 0.5 + 0.01 must hold in floating point


def validation_size(budget: int, n_validation: int, train_batch: int = TRAIN_BATCH, rounds: int = MAX_ROUNDS) -> int:
    return min(n_validation, max(3, (budget - rounds * train_batch) // 6))


def smallest_budget(n_train: int, n_validation: int) -> int:
    """Protocol 8.9 (12 with 150/50): the seed's validation batch + one attempt (train batch + validation batch)."""
    return min(TRAIN_BATCH, n_train) + 2 * min(3, n_validation)


def adopt(candidate: float | None, seed: float, best: float) -> bool:
    return candidate is not None and candidate >= seed + MARGIN - _EPS and candidate >= best - _EPS


@dataclass
class Gate:
    """The round / attempt schedule. `next_attempt(remaining)` says whether to run one more attempt (None) or why
    to stop; `record(adopted)` closes an attempt."""

    per_attempt: int  # train + validation rollouts of one attempt
    round: int = 1
    attempt: int = 1
    consecutive_rejections: int = 0

    def next_attempt(self, remaining: int) -> StopReason | None:
        if self.round > MAX_ROUNDS:
            return StopReason.MAX_ROUNDS
        if self.consecutive_rejections >= MAX_CONSECUTIVE_REJECTIONS:
            return StopReason.PATIENCE
        if remaining < self.per_attempt:
            return StopReason.BUDGET
        return None

    def record(self, adopted: bool) -> None:
        if adopted:
            self.consecutive_rejections = 0
        elif self.attempt < ATTEMPTS_PER_ROUND:
            self.attempt += 1  # the retry of a rejected round
            return
        else:
            self.consecutive_rejections += 1
        self.round += 1
        self.attempt = 1
