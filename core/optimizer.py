"""The Optimizer protocol (protocol-v1 section 7) and what the engine hands a method.

A method sees only train and validation rows, the frozen seed bundle, and a runner whose every rollout goes
through the ledger. It never sees test rows or the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from core.ledger import LedgerSnapshot
from core.models import PromptBundle, RolloutRecord, Row


class OptimizerRunner(Protocol):
    roles: tuple[str, ...]

    async def run_batch(self, rows: Sequence[Row], bundle: PromptBundle, iteration: int | str) -> list[RolloutRecord]:
        """Charged rollouts (reserved before dispatch, trimmed at the cap; rows past it come back
        budget-exhausted and uncharged), in input order."""
        ...

    def budget(self) -> LedgerSnapshot: ...

    def validate_bundle(self, bundle: PromptBundle) -> None: ...


@dataclass(frozen=True)
class CurvePoint:
    charged_rollouts: int
    native_iteration: int
    native_observed_score: float | None
    bundle_hash: str
    reason: str


@dataclass(frozen=True)
class OptimizerResult:
    incumbent: PromptBundle
    stop_reason: str
    curve: tuple[CurvePoint, ...] = ()
    artifacts: dict[str, Any] = field(default_factory=dict)
    reflection_usage: dict[str, Any] = field(default_factory=dict)


class Optimizer(Protocol):
    name: str
    smallest_useful_budget: int

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        """A one-paragraph pre-flight plan: what the budget buys for this method and these split sizes."""
        ...

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> OptimizerResult: ...
