"""Phase 1, optimize: the method spends the rollout budget on train/validation rows; optimization.json seals the
incumbent, the closed ledger and the usage. Resumes from a sealed optimization.json when it exists."""

from __future__ import annotations

import os
import time
from typing import Any

from core.artifacts import BudgetSnapshot, BundleJson, FailureCounts, Optimization
from core.errors import (
    ArtifactError,
    EngineError,
    InfrastructureError,
    InfrastructureInvalidError,
    OptimizationFailed,
    ReflectionUnavailableError,
)
from core.ledger import LedgerSnapshot
from core.models import FailureKind, PromptBundle, RolloutRecord, Row
from core.optimizer import CurvePoint, OptimizerResult
from core.protocol import PROTOCOL_ID
from core.scrub import scrub, secret_values
from engine.job.artifacts import (
    Sealed,
    read_artifact,
    write_artifact,
    write_json_atomic,
    write_jsonl_atomic,
    write_sealed,
)
from engine.containment import leaves
from engine.job.context import JobContext
from core.models import rollout_usage_totals as usage_totals
from engine.job.evaluation import failure_counts
from engine.job.optimization import LedgerRunner, component_usage, learning_curve
from engine.log import get_logger

log = get_logger("engine.job")

FILE = "optimization.json"


def bundle_json(bundle: PromptBundle) -> BundleJson:
    return BundleJson(**bundle.to_json())


async def optimize(ctx: JobContext) -> Sealed[Optimization]:
    path = ctx.out / FILE
    if path.exists():
        sealed = read_artifact(path, Optimization)
        if sealed.artifact.cell_id != ctx.cell_id:
            raise ArtifactError("optimization.json belongs to another job")
        _stop_if_failed(sealed.artifact)
        return sealed
    train, validation = ctx.data.train(), ctx.data.validation()
    roles = ctx.topology.roles(ctx.cfg.cell.task, ctx.cfg.cell.team_size)
    game = getattr(ctx.topology, "coalition_game", None)  # topologies that honour member masks offer one
    facade = LedgerRunner(runner=ctx.runner, ledger=ctx.ledger, cell_id=ctx.cell_id, optimizer_seed=ctx.cfg.seed,
                          roles=roles, allowed_ids={r.id for r in train} | {r.id for r in validation},
                          game=game(ctx.cfg.cell.task, ctx.cfg.cell.team_size) if callable(game) else None)
    if not ctx.cfg.quiet:
        log.info(f"plan: {ctx.optimizer.plan(ctx.cfg.budget, len(train), len(validation))}", kind="plan")
    started = time.monotonic()
    result, failure = await _run_optimizer(ctx, facade, train, validation)
    snap = ctx.ledger.snapshot()
    stopping = failure["failure_kind"] not in (None, FailureKind.INFRASTRUCTURE_INVALID.value)
    if snap.violations() and not stopping:
        raise ArtifactError(f"ledger not closed after optimization: {'; '.join(snap.violations())}")
    _write_phase_files(ctx, facade, result, snap)
    envelope = _envelope(ctx, facade, result, snap, failure, train, validation)
    # Wall-clock time stays out of the sealed envelope so that a resumed job seals byte-identical artifacts.
    write_json_atomic(ctx.out / "optimization" / "timing.json",
                      {"elapsed_seconds": round(time.monotonic() - started, 3)})
    sealed = write_artifact(path, envelope)
    await ctx.store.mutate("phase.completed", "run", ctx.cell_id, actor="engine:job",
                           new={"phase": "optimize", "stop_reason": result.stop_reason,
                                "budget": snap.as_dict(), "envelope_sha256": sealed.sha256})
    _stop_if_failed(sealed.artifact)
    return sealed


def _stop_if_failed(optimization: Optimization) -> None:
    """A stopping failure kind (section 6) ends the job here, now and on every re-run: no selection, no test."""
    kind = optimization.failure_kind
    if kind is None or kind == FailureKind.INFRASTRUCTURE_INVALID.value:
        return
    raise OptimizationFailed(f"optimization failed ({kind}): {optimization.error_type}: {optimization.error}; "
                             "optimization.json records it and the job stops (not reportable); fix the cause and "
                             "run the job in a new --out", failure_kind=kind)


async def _run_optimizer(ctx: JobContext, facade: LedgerRunner, train: list[Row], validation: list[Row]
                         ) -> tuple[OptimizerResult, dict[str, Any]]:
    """The method's result, or (when the endpoints kept failing) the seed bundle and the failure fields."""
    try:
        result = await ctx.optimizer.optimize(facade, train, validation, ctx.seed_bundle, ctx.cfg.budget)
        return result, {"status": "completed", "failure_kind": None}
    except Exception as exc:  # cancellation is a BaseException and passes through
        # Section 6: infrastructure_invalid (the endpoints kept failing) is reportable, the seed bundle is kept and
        # the ledger must still be closed; contract_failure, program_failure and ambiguous_external (reservations
        # still open) stop the job after optimization.json records them.
        snap = ctx.ledger.snapshot()
        cause = _cause(exc)
        infrastructure = isinstance(cause, (InfrastructureError, InfrastructureInvalidError))  # any leaf kind
        error_kind = "infrastructure" if infrastructure else getattr(cause, "kind", None) or type(cause).__name__
        kind = FailureKind.of(error_kind, snap.reserved)
        failure = {"status": "failed", "failure_kind": kind.value, "error_type": type(cause).__name__,
                   "error": scrub(str(cause), secret_values(os.environ))[:2000]}
        seed = ctx.seed_bundle
        # a model client that kept failing (engine/reflection.py's breaker) has its own stop reason
        stop = cause.stop_reason if isinstance(cause, ReflectionUnavailableError) else kind.value
        # the reflection calls made before the failure stay counted (the method's result, which carries them on
        # a completed run, is not there)
        reflection = ctx.clients.get("reflection")
        result = OptimizerResult(incumbent=seed, stop_reason=stop,
                                 curve=(CurvePoint(snap.charged, 0, None, seed.digest, stop),),
                                 reflection_usage=reflection.usage() if reflection is not None and reflection.bound
                                 else {})
        if kind is FailureKind.INFRASTRUCTURE_INVALID:
            log.warning(f"warning: optimization stopped, infrastructure invalid: {failure['error']}")
        else:
            log.error(f"error: optimization failed ({kind.value}): {failure['error_type']}: {failure['error']}")
        return result, failure


def _cause(exc: Exception) -> BaseException:
    """What a method's failure stands for: an exception group (the method's own task group) is classified by its
    first engine error, else by its first leaf."""
    found = list(leaves(exc))
    return next((leaf for leaf in found if isinstance(leaf, EngineError)), found[0])


def _write_phase_files(ctx: JobContext, facade: LedgerRunner, result: OptimizerResult, snap: LedgerSnapshot) -> None:
    """optimization/: charged records, attempts, the learning curve, both bundles, the method's own result."""
    opt_dir = ctx.out / "optimization"
    write_jsonl_atomic(opt_dir / "records.jsonl", facade.charged_artifacts)
    write_jsonl_atomic(opt_dir / "attempts.jsonl", [
        {"example_id": rec.example_id, "status": rec.status.value, "attempts": rec.attempts,
         "charged": rec.charged, "budget_exhausted": rec.budget_exhausted, "rollout_id": rec.rollout_id}
        for rec, _ in facade.records])
    write_jsonl_atomic(opt_dir / "learning_curve.jsonl", learning_curve(result.curve, ctx.cfg.budget, snap.charged))
    for bundle in {result.incumbent.digest: result.incumbent, ctx.seed_bundle.digest: ctx.seed_bundle}.values():
        write_json_atomic(opt_dir / f"bundle-{bundle.digest}.json", bundle.to_json())
    write_sealed(opt_dir / "optimizer_result.json", {
        "method": ctx.cfg.method, "stop_reason": result.stop_reason,
        "incumbent_bundle": result.incumbent.to_json(), "budget_snapshot": snap.as_dict(),
        "artifacts": result.artifacts})


def _envelope(ctx: JobContext, facade: LedgerRunner, result: OptimizerResult, snap: LedgerSnapshot,
              failure: dict[str, Any], train: list[Row], validation: list[Row]) -> Optimization:
    records: list[RolloutRecord] = [rec for rec, _ in facade.records]
    components = {name: client for name, client in ctx.clients.items() if name != "reflection" and client.bound}
    usage = {"task": usage_totals(records), **component_usage(result.reflection_usage, components)}
    return Optimization(
        schema="mas-promptbench-optimization/v1", protocol_id=PROTOCOL_ID, method=ctx.cfg.method,
        cell=ctx.identity.cell, cell_id=ctx.cell_id, **failure,
        seed_bundle=bundle_json(ctx.seed_bundle), training_ids=[r.id for r in train],
        validation_ids=[r.id for r in validation], incumbent_bundle=bundle_json(result.incumbent),
        stop_reason=result.stop_reason, budget=BudgetSnapshot(**snap.as_dict()), usage=usage,
        failure_counts=FailureCounts(**failure_counts(records)),
        optimizer_artifact="optimization/optimizer_result.json")
