"""The optimize phase: the ledger-bound runner facade a method receives, and the phase artifacts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.errors import ContractError, InfrastructureInvalidError
from core.ledger import BudgetLedger, LedgerSnapshot
from core.models import PromptBundle, RolloutRecord, Row
from core.optimizer import CurvePoint
from core.protocol import OPTIMIZATION_DECODING, REPETITION_PENALTY
from core.seeds import request_seed
from core.selection import forbidden_metadata
from engine.runner import RolloutSpec, Runner, rollout_key


MAX_CONSECUTIVE_INFRA_FAILURES = 25


class LedgerRunner:
    """What an optimizer sees: charged rollouts on train/validation rows only, seeds derived per section 5.5.

    Infrastructure failures are never charged, so a dead endpoint would let a method loop without spending its
    budget: after MAX_CONSECUTIVE_INFRA_FAILURES rollouts in a row end as infrastructure failures (after their
    retries), the runner raises InfrastructureInvalidError and the job keeps the seed bundle.
    """

    def __init__(self, *, runner: Runner, ledger: BudgetLedger, cell_id: str, optimizer_seed: int,
                 roles: Sequence[str], allowed_ids: set[str],
                 max_consecutive_infra: int = MAX_CONSECUTIVE_INFRA_FAILURES):
        self._runner = runner
        self._ledger = ledger
        self._cell_id = cell_id
        self._seed = optimizer_seed
        self.roles = tuple(roles)
        self._allowed = frozenset(allowed_ids)
        # what the phase artifacts need, without the final outputs (memory does not grow with the rollouts):
        # (record without final output, budget after it), and for charged rollouts the record as written to
        # records.jsonl, its large values referenced into the store's blobs
        self.records: list[tuple[RolloutRecord, dict[str, int]]] = []
        self.charged_artifacts: list[dict[str, Any]] = []
        self._max_infra = max_consecutive_infra
        self._infra_run = 0

    def budget(self) -> LedgerSnapshot:
        return self._ledger.snapshot()

    def validate_bundle(self, bundle: PromptBundle) -> None:
        if set(bundle.roles) != set(self.roles):
            raise ContractError(f"bundle roles {sorted(bundle.roles)} != required roles {sorted(self.roles)}")
        leaked = forbidden_metadata(bundle.metadata)
        if leaked:
            raise ContractError(f"bundle metadata carries forbidden keys: {', '.join(leaked)}")

    async def run_batch(self, rows: Sequence[Row], bundle: PromptBundle, iteration: int | str) -> list[RolloutRecord]:
        for row in rows:
            if row.id not in self._allowed:
                raise ContractError(f"optimizer asked for row {row.id!r}, which is not a train/validation row")
        self.validate_bundle(bundle)
        specs = []
        for pos, row in enumerate(rows):
            seed = request_seed(self._seed, self._cell_id, "optimize", iteration, row.id, bundle.digest, pos)
            specs.append(RolloutSpec(
                row=row, bundle=bundle, seed=seed, phase="optimize", position=pos,
                rollout_key=rollout_key(phase="optimize", iteration=str(iteration), position=pos, example_id=row.id,
                                        bundle=bundle.digest, seed=seed)))
        decoding = {**OPTIMIZATION_DECODING, "repetition_penalty": REPETITION_PENALTY}
        records = await self._runner.run_batch(specs, decoding, self._ledger)
        charged = [rec for rec in records if rec.charged]
        stored = await self._runner.store.externalize(
            [rec.model_copy(update={"replayed": False}).model_dump(mode="json") for rec in charged])
        after = iter(stored)
        for rec in records:
            budget = self._ledger.snapshot().as_dict()
            if rec.charged:
                self.charged_artifacts.append({"record": next(after), "budget_after": budget})
            self.records.append((rec.model_copy(update={"final_output": None}), budget))
            if rec.status.value == "infrastructure_failure":
                self._infra_run += 1
            elif not rec.budget_exhausted:
                self._infra_run = 0
        if self._infra_run >= self._max_infra:
            raise InfrastructureInvalidError(
                f"{self._infra_run} consecutive rollouts ended as infrastructure failures after retries "
                f"(last: {records[-1].error})")
        return records


def learning_curve(points: Sequence[CurvePoint], budget: int, final_charged: int) -> list[dict[str, Any]]:
    """Project the latest committed state onto the charged-rollout grid 0, 10, ..., budget (no model calls);
    after the method stops, the incumbent is carried forward to the budget."""
    ordered = sorted(points, key=lambda p: p.charged_rollouts)
    rows = []
    grid = list(range(0, budget + 1, 10))
    if grid[-1] != budget:
        grid.append(budget)
    for g in grid:
        current = None
        for p in ordered:
            if p.charged_rollouts <= g:
                current = p
        rows.append({
            "schema_version": 1,
            "rollout_grid": g,
            "charged_rollouts": min(g, final_charged),
            "reason": current.reason if current else "no_state",
            "staleness": g - current.charged_rollouts if current else None,
            "post_stop_carried_forward": g > final_charged,
            "native_iteration": current.native_iteration if current else None,
            "native_observed_score": current.native_observed_score if current else None,
            "bundle_hash": current.bundle_hash if current else None,
        })
    return rows
