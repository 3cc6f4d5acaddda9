"""Phase 2, select: seed and incumbent on the validation split, the locked decision (core.selection) sealed in
selection.json. Test rows unseal only after it verifies. Resumes from a sealed selection.json when it exists."""

from __future__ import annotations

from typing import cast

from core.artifacts import Candidate, FailureCounts, Optimization, Selection, ValidationCounts
from core.canonical import content_hash
from core.errors import ArtifactError
from core.models import PromptBundle
from core.protocol import PROTOCOL_ID
from core.selection import Decision, decide, forbidden_metadata
from engine.job.artifacts import Sealed, read_artifact, write_artifact
from engine.job.context import JobContext
from engine.job.evaluation import Evaluation, failure_counts
from engine.job.phase_optimize import bundle_json

FILE = "selection.json"


async def select(ctx: JobContext, optimization: Sealed[Optimization]) -> Sealed[Selection]:
    path = ctx.out / FILE
    if path.exists():
        selection = read_artifact(path, Selection)
        if selection.artifact.optimization_envelope_sha256 != optimization.sha256:
            raise ArtifactError("selection.json does not match optimization.json")
        return selection
    opt = optimization.artifact
    validation = ctx.data.validation()
    incumbent = PromptBundle.from_json(opt.incumbent_bundle.to_json())
    incumbent_valid = set(incumbent.roles) == set(ctx.seed_bundle.roles) and not forbidden_metadata(
        incumbent.metadata)
    reportable = opt.status == "completed" and opt.budget.reserved == 0
    base_eval = await ctx.evaluator.evaluate(ctx.seed_bundle, "validation", validation)
    inc_eval: Evaluation | None = None
    if incumbent_valid and reportable:
        inc_eval = await ctx.evaluator.evaluate(incumbent, "validation", validation)
    decision = decide(ordered_ids=[r.id for r in validation], seed_records=base_eval.records,
                      incumbent_records=inc_eval.records if inc_eval else None,
                      optimization_reportable=reportable,
                      optimization_infra_invalid=opt.failure_kind == "infrastructure_invalid",
                      incumbent_valid=incumbent_valid)
    deployed = incumbent if decision.selected_candidate == "incumbent" else ctx.seed_bundle
    body = _selection(ctx, optimization, incumbent, deployed, decision, base_eval, inc_eval,
                      [r.id for r in validation])
    sealed = write_artifact(path, body)
    await ctx.store.mutate("phase.completed", "run", ctx.cell_id, actor="engine:job",
                           new={"phase": "validation", "baseline_evaluation_id": base_eval.evaluation_id,
                                "candidate_evaluation_id": inc_eval.evaluation_id if inc_eval else None,
                                "baseline_mean": base_eval.mean,
                                "incumbent_mean": inc_eval.mean if inc_eval else None})
    await ctx.store.mutate("selection.sealed", "run", ctx.cell_id, actor="engine:selection",
                           new={"selection_id": body.selection_id,
                                "selected_candidate": decision.selected_candidate,
                                "fallback_reason": decision.fallback_reason, "sha256": sealed.sha256},
                           reason=decision.fallback_reason or "incumbent strictly better on validation")
    return sealed


def _selection(ctx: JobContext, optimization: Sealed[Optimization], incumbent: PromptBundle,
               deployed: PromptBundle, decision: Decision, base_eval: Evaluation,
               inc_eval: Evaluation | None, ordered_ids: list[str]) -> Selection:
    """The sealed body; selection_id is the content hash of every other field."""
    body = Selection(
        schema="mas-promptbench-locked-selection/v1", protocol_id=PROTOCOL_ID, cell=ctx.identity.cell,
        condition_id=ctx.identity.condition_id, optimization_envelope_sha256=optimization.sha256,
        seed_bundle=bundle_json(ctx.seed_bundle), incumbent_bundle=bundle_json(incumbent),
        deployed_bundle=bundle_json(deployed), selected_candidate=cast(Candidate, decision.selected_candidate),
        fallback_reason=decision.fallback_reason, baseline_validation_score=decision.baseline_score,
        incumbent_validation_score=decision.incumbent_score, validation_delta=decision.validation_delta,
        baseline_validation_id=base_eval.evaluation_id,
        candidate_validation_id=inc_eval.evaluation_id if inc_eval else None,
        ordered_validation_ids=ordered_ids,
        validation_failure_counts=ValidationCounts(
            baseline=FailureCounts(**failure_counts(base_eval.records)),
            incumbent=FailureCounts(**failure_counts(inc_eval.records)) if inc_eval else None),
        test_exposed=False, selection_id="")
    unsigned = {k: v for k, v in body.to_json().items() if k != "selection_id"}
    return body.model_copy(update={"selection_id": content_hash(unsigned)[:32]})
