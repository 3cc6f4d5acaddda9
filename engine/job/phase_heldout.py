"""Phase 3, test: the seed and the deployed bundle on the held-out test split (unsealed only by a verified
selection.json), paired per example; test.json is sealed and result.json, what aggregation reads, written."""

from __future__ import annotations

from pathlib import Path

from core.artifacts import (
    ArmCounts,
    ArmUsage,
    FailureCounts,
    GridCell,
    HeldOutTest,
    JobResult,
    Optimization,
    ResultHeldOut,
    ResultOptimization,
    ResultSelection,
    Selection,
    UsageTotals,
)
from core.errors import ArtifactError
from core.models import PromptBundle
from core.protocol import PROTOCOL_ID

from engine.job.artifacts import Sealed, read_json, write_artifact, write_json_atomic
from engine.job.context import JobContext
from core.models import rollout_usage_totals as usage_totals
from engine.job.evaluation import failure_counts


async def held_out_test(ctx: JobContext, optimization: Sealed[Optimization], selection: Sealed[Selection]
                     ) -> JobResult:
    selected = selection.artifact
    rows = ctx.data.test()  # raises unless selection.json is sealed and verifies
    deployed = PromptBundle.from_json(selected.deployed_bundle.to_json())
    base = await ctx.evaluator.evaluate(ctx.seed_bundle, "test", rows)
    dep = await ctx.evaluator.evaluate(deployed, "test", rows)
    valid = (all(r.usable for r in base.records) and all(r.usable for r in dep.records)
             and base.example_ids == dep.example_ids == [r.id for r in rows] and bool(rows))
    base_mean, dep_mean = base.mean, dep.mean
    delta = round(100.0 * (dep_mean - base_mean), 10) if valid and base_mean is not None and dep_mean is not None \
        else None
    counts = ArmCounts(baseline=FailureCounts(**failure_counts(base.records)),
                       deployed=FailureCounts(**failure_counts(dep.records)))
    test = HeldOutTest(
        schema="mas-promptbench-test/v1", selection_id=selected.selection_id,
        condition_id=ctx.identity.condition_id, evaluation_seed=ctx.cfg.seed,
        baseline_evaluation_id=base.evaluation_id, deployed_evaluation_id=dep.evaluation_id,
        example_ids=base.example_ids, baseline_scores=base.scores, deployed_scores=dep.scores,
        baseline_status=[r.status.value for r in base.records], deployed_status=[r.status.value for r in dep.records],
        valid_for_aggregation=valid, baseline_mean=base_mean, deployed_mean=dep_mean, delta_pp=delta,
        fallback_reason=selected.fallback_reason, selected_candidate=selected.selected_candidate,
        usage=ArmUsage(baseline=UsageTotals(**usage_totals(list(base.records))),
                       deployed=UsageTotals(**usage_totals(list(dep.records)))),
        failure_counts=counts, search_budget_charged=0)
    write_artifact(ctx.out / "test.json", test)
    await ctx.store.mutate("phase.completed", "run", ctx.cell_id, actor="engine:job",
                           new={"phase": "test", "baseline_evaluation_id": base.evaluation_id,
                                "deployed_evaluation_id": dep.evaluation_id, "baseline_mean": base_mean,
                                "deployed_mean": dep_mean, "delta_pp": delta, "valid_for_aggregation": valid,
                                "failure_counts": counts.to_json(), "example_ids": base.example_ids})
    result = job_result(ctx, optimization.artifact, selected, test)
    write_json_atomic(ctx.out / "result.json", result.to_json())
    return result


def job_result(ctx: JobContext, optimization: Optimization, selection: Selection, test: HeldOutTest) -> JobResult:
    """result.json: the job's identity, the phases' outcomes and the paired test scores."""
    ident = ctx.identity
    return JobResult(
        schema="mas-promptbench-job-result/v1", status="completed", protocol_id=PROTOCOL_ID,
        protocol_conformant=ident.protocol_conformant, nonconformance_reasons=ident.nonconformance_reasons,
        cell=ident.cell, cell_id=ident.cell_id, method=ctx.cfg.method, optimizer_seed=ctx.cfg.seed,
        grid_cell=GridCell(method=ctx.cfg.method, **ident.cell.to_json()), registry_key=ident.registry_key,
        source_tables=ident.source_tables, condition_id=ident.condition_id, endpoint_kind=ident.endpoint_kind,
        optimization=ResultOptimization(
            status=optimization.status, failure_kind=optimization.failure_kind,
            stop_reason=optimization.stop_reason, budget=optimization.budget, usage=optimization.usage,
            failure_counts=optimization.failure_counts, elapsed_seconds=_elapsed(ctx.out)),
        selection=ResultSelection(
            selection_id=selection.selection_id, selected_candidate=selection.selected_candidate,
            fallback_reason=selection.fallback_reason,
            baseline_validation_score=selection.baseline_validation_score,
            incumbent_validation_score=selection.incumbent_validation_score,
            validation_delta=selection.validation_delta,
            validation_failure_counts=selection.validation_failure_counts),
        test=ResultHeldOut(
            example_ids=test.example_ids, baseline_scores=test.baseline_scores,
            deployed_scores=test.deployed_scores, valid_for_aggregation=test.valid_for_aggregation,
            baseline_mean=test.baseline_mean, deployed_mean=test.deployed_mean, delta_pp=test.delta_pp,
            failure_counts=test.failure_counts))


def _elapsed(out: Path) -> float | None:
    path = out / "optimization" / "timing.json"
    try:
        return float(read_json(path)["elapsed_seconds"])
    except (ArtifactError, KeyError, TypeError, ValueError):
        return None
