"""What a rollout is and what it writes: its spec (`RolloutSpec`, identified by `rollout_key`), its record
(`build_record`) and the one store op that makes it durable when it ends (`finish_op`: score annotation, rollout
annotation, terminal status, ledger mutation, replay index). The runner (engine/runner.py) runs it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.canonical import content_hash
from core.coalition import CONTROL_KEY, MemberMask
from core.models import AgentOutput, PromptBundle, RolloutRecord, RolloutStatus, Row, Score, Usage
from core.scrub import scrub
from core.vocabulary import Actor, MutationType, NodeFailureKind, NodeStatus, Phase
from engine.store import Store
from engine.store.writer import Op


@dataclass(frozen=True)
class RolloutSpec:
    row: Row
    bundle: PromptBundle
    seed: int
    phase: str
    rollout_key: str
    evaluation_id: str | None = None
    position: int = 0
    control: MemberMask | None = None  # a coalition mask (optimize phase only; core/coalition.py)


def rollout_key(**fields: Any) -> str:
    """Logical identity of a rollout (phase context, row, bundle, seed); the replay key in the store."""
    return content_hash(fields)


Outcome = tuple[AgentOutput, Score, Usage, float]


def build_record(spec: RolloutSpec, node_id: str, outcome: Outcome | None, attempts: int,
                 err: BaseException | None, secrets: tuple[str, ...]) -> RolloutRecord:
    """The rollout's record: its scored outcome (feedback scrubbed of `secrets`), or the infrastructure failure of
    its last attempt."""
    if outcome is None:
        return RolloutRecord(
            rollout_id=node_id, example_id=spec.row.id, phase=spec.phase,
            status=RolloutStatus.INFRASTRUCTURE_FAILURE, score=None, request_seed=spec.seed,
            bundle_sha256=spec.bundle.digest, attempts=attempts,
            error_kind=getattr(err, "kind", "infrastructure"), error=scrub(str(err), secrets)[:2000],
            metadata={"evaluation_id": spec.evaluation_id, "position": spec.position})
    output, score, usage, latency = outcome
    status = RolloutStatus.SUCCESS if score.value >= 1.0 else RolloutStatus.SEMANTIC_FAILURE
    return RolloutRecord(
        rollout_id=node_id, example_id=spec.row.id, phase=spec.phase, status=status,
        score=float(score.value), feedback=scrub(score.feedback, secrets),
        final_output=output, usage=usage,
        request_seed=spec.seed, bundle_sha256=spec.bundle.digest, attempts=attempts,
        latency_seconds=round(latency, 6),
        metadata={"evaluation_id": spec.evaluation_id, "position": spec.position,
                  "malformed": score.malformed, "scorer_metadata": score.metadata,
                  **({"topology": output.metadata} if output.metadata else {}),
                  **({CONTROL_KEY: output.metadata.get(CONTROL_KEY)} if spec.control is not None else {})})


def finish_op(store: Store, spec: RolloutSpec, node_id: str, record: RolloutRecord, scorer_id: str) -> Op:
    """Score annotation, rollout annotation, terminal status mutation, ledger mutation and the replay index."""
    data = record.model_dump(mode="json")
    final_status = NodeStatus.COMPLETED if record.status.usable else NodeStatus.FAILED
    extra: dict[str, Any] = {"rollout_status": record.status.value}
    if not record.status.usable:
        extra["failure"] = {"kind": NodeFailureKind.INFRA_ERROR, "message": record.error,
                            "exception_type": record.error_kind}

    def op(conn: Any) -> None:
        if record.score is not None:
            store.op_annotation(conn, "node", node_id, "mpb.score",
                                {"value": record.score, "feedback": record.feedback,
                                 "malformed": record.metadata.get("malformed", False),
                                 "metadata": record.metadata.get("scorer_metadata", {}),
                                 "scorer": scorer_id}, actor=Actor.SCORER)
        store.op_annotation(conn, "node", node_id, "mpb.rollout",
                            {"status": record.status.value, "example_id": record.example_id,
                             "phase": record.phase, "request_seed": record.request_seed,
                             "bundle_sha256": record.bundle_sha256, "attempts": record.attempts,
                             "charged": record.charged, "usage": record.usage.model_dump(),
                             "final_output": None if record.final_output is None
                             else record.final_output.model_dump(mode="json"),
                             "budget_exhausted": record.budget_exhausted, "error": record.error,
                             "evaluation_id": spec.evaluation_id, "position": spec.position,
                             **({CONTROL_KEY: record.metadata.get(CONTROL_KEY)} if spec.control else {})},
                            actor=Actor.RUNNER)
        store.op_status(conn, node_id, final_status, actor=Actor.RUNNER, reason=record.error, extra=extra)
        if record.charged or spec.phase == Phase.OPTIMIZE:
            store.op_mutation(conn, MutationType.LEDGER_COMMITTED, "run", store.run_id, actor=Actor.LEDGER,
                              new={"rollout": node_id, "status": record.status.value, "charged": record.charged})
        store.op_rollout(conn, rollout_key=spec.rollout_key, node_id=node_id,
                         evaluation_id=spec.evaluation_id, phase=spec.phase, position=spec.position, record=data)

    return op
