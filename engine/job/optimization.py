"""The optimize phase: the ledger-bound runner facade a method receives, and the phase artifacts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.coalition import CoalitionGame, MemberMask
from core.errors import ContractError, InfrastructureInvalidError
from core.ledger import BudgetLedger, LedgerSnapshot
from core.models import PromptBundle, RolloutRecord, RolloutStatus, Row
from core.optimizer import CurvePoint
from core.protocol import OPTIMIZATION_DECODING, REPETITION_PENALTY, Decoding
from core.seeds import request_seed
from core.selection import forbidden_metadata
from core.transcript import Transcript
from engine.chat.endpoint import EndpointPool
from engine.reflection import ReflectionClient
from engine.runner import RetryPolicy, RolloutSpec, Runner, rollout_key
from engine.store import Store

# Task-model components of MAPRO (8.3) and MASPO (8.4): thinking off, the task runners' repetition penalty.
# judge: pointwise potentials / blame (MAPRO) and the pairwise A/B judge (MASPO) at T 0, <= 1,024 tokens;
# probe: MAPRO's single-agent, no-tool candidate probes at T 0.2, top-p 0.9, 768 tokens.
TASK_MODEL_COMPONENTS = {
    "judge": Decoding(temperature=0.0, top_p=1.0, max_tokens=1024, thinking=False,
                      repetition_penalty=REPETITION_PENALTY),
    "probe": Decoding(temperature=0.2, top_p=0.9, max_tokens=768, thinking=False, repetition_penalty=REPETITION_PENALTY),
}


MAX_CONSECUTIVE_INFRA_FAILURES = 25


class LedgerRunner:
    """What an optimizer sees: charged rollouts on train/validation rows only, seeds derived per section 5.5.

    Infrastructure failures are never charged, so a dead endpoint would let a method loop without spending its
    budget: after MAX_CONSECUTIVE_INFRA_FAILURES rollouts in a row end as infrastructure failures (after their
    retries), the runner raises InfrastructureInvalidError and the job keeps the seed bundle.
    """

    def __init__(self, *, runner: Runner, ledger: BudgetLedger, cell_id: str, optimizer_seed: int,
                 roles: Sequence[str], allowed_ids: set[str],
                 max_consecutive_infra: int = MAX_CONSECUTIVE_INFRA_FAILURES, game: CoalitionGame | None = None):
        self._runner = runner
        self._ledger = ledger
        self._cell_id = cell_id
        self._seed = optimizer_seed
        self.roles = tuple(roles)
        self.game = game  # the topology's coalition game (core/coalition.py), None when it offers none
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

    async def run_batch(self, rows: Sequence[Row], bundle: PromptBundle, iteration: int | str, *,
                        control: MemberMask | None = None) -> list[RolloutRecord]:
        return await self._run(rows, bundle, iteration, bundle.digest, control)

    async def run_paired(self, rows: Sequence[Row], bundle: PromptBundle, iteration: int | str,
                         pair_key: str, *, control: MemberMask | None = None) -> list[RolloutRecord]:
        """core.optimizer.SessionRunner: the seed's role slot holds `pair_key` instead of the bundle digest (a
        `control` mask changes the rollout's identity, not its seed: coalitions of one pair see the same seeds)."""
        return await self._run(rows, bundle, f"{iteration}|pair", f"pair:{pair_key}", control)

    async def transcripts(self, records: Sequence[RolloutRecord]) -> list[Transcript]:
        """core.optimizer.SessionRunner: every recorded turn of each rollout, read from the store on a worker
        thread (engine/store/reads.py), in input order. Nothing is kept in memory: a method reads what it needs."""
        return await self._runner.store.transcripts([rec.rollout_id for rec in records])

    async def _run(self, rows: Sequence[Row], bundle: PromptBundle, iteration: int | str,
                   seed_slot: str, control: MemberMask | None = None) -> list[RolloutRecord]:
        for row in rows:
            if row.id not in self._allowed:
                raise ContractError(f"optimizer asked for row {row.id!r}, which is not a train/validation row")
        self.validate_bundle(bundle)
        specs = []
        for pos, row in enumerate(rows):
            seed = request_seed(self._seed, self._cell_id, "optimize", iteration, row.id, seed_slot, pos)
            masked = {} if control is None else {"control": control.as_json()}  # unmasked keys unchanged
            specs.append(RolloutSpec(
                row=row, bundle=bundle, seed=seed, phase="optimize", position=pos, control=control,
                rollout_key=rollout_key(phase="optimize", iteration=str(iteration), position=pos, example_id=row.id,
                                        bundle=bundle.digest, seed=seed, **masked)))
        records = await self._runner.run_batch(specs, OPTIMIZATION_DECODING, self._ledger)
        charged = [rec for rec in records if rec.charged]
        stored = await self._runner.store.externalize(
            [rec.model_copy(update={"replayed": False}).model_dump(mode="json") for rec in charged])
        after = iter(stored)
        for rec in records:
            budget = self._ledger.snapshot().as_dict()
            if rec.charged:
                self.charged_artifacts.append({"record": next(after), "budget_after": budget})
            self.records.append((rec.without_outputs(), budget))
            if rec.status == RolloutStatus.INFRASTRUCTURE_FAILURE:
                self._infra_run += 1
            elif not rec.budget_exhausted:
                self._infra_run = 0
        if self._infra_run >= self._max_infra:
            raise InfrastructureInvalidError(
                f"{self._infra_run} consecutive rollouts ended as infrastructure failures after retries "
                f"(last: {records[-1].error})")
        return records


def task_model_clients(components: Sequence[str], *, pool: EndpointPool, store: Store, run_node: str,
                       cell_id: str, optimizer_seed: int, retry: RetryPolicy) -> dict[str, ReflectionClient]:
    """Recorded, uncharged clients on the TASK endpoints for the components a method declares (judge, probe)."""
    clients = {}
    for name in components:
        clients[name] = ReflectionClient(endpoint=pool, store=store, run_node=run_node, cell_id=cell_id,
                                         optimizer_seed=optimizer_seed, retry=retry, component=name,
                                         decoding=TASK_MODEL_COMPONENTS[name])
    return clients


def component_usage(reflection: dict[str, Any], clients: Mapping[str, Any]) -> dict[str, Any]:
    """optimization.json `usage` beside `task`: reflection, judge and probe calls (never charged)."""
    usage: dict[str, Any] = {"judge": {"model_calls": 0}, "probe": {"model_calls": 0},
                             "reflection": reflection or {"model_calls": 0}}
    for name, client in clients.items():
        usage[name] = client.usage()
    return usage


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
