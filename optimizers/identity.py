"""`identity`: returns the seed bundle, spends zero rollouts (stop reason identity_no_search)."""

from __future__ import annotations

from typing import Sequence

from core.models import PromptBundle, Row
from core.optimizer import CurvePoint, OptimizerResult, OptimizerRunner
from core.vocabulary import StopReason


class Identity:
    name = "identity"
    smallest_useful_budget = 1

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        return "identity: no search; returns the seed bundle and charges 0 of the budget"

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> OptimizerResult:
        point = CurvePoint(charged_rollouts=0, native_iteration=0, native_observed_score=None,
                           bundle_hash=seed_bundle.digest, reason="identity_no_search")
        return OptimizerResult(incumbent=seed_bundle, stop_reason=StopReason.IDENTITY_NO_SEARCH, curve=(point,))
