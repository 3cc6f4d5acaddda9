"""The job artifacts as typed models: job.json, optimization.json, selection.json, test.json, result.json and
evaluations/<id>.json.

The job writes them through these models, aggregation and the card exporter read them through these models, the
synthetic grid generates through them, and `schemas/*.schema.json` are exported from them (engine/job/schemas.py).

Every model forbids unknown fields and validates strictly (no "4" for 4, no 1 for True). The schema version is
the `schema` field each artifact already carries (`mas-promptbench-<name>/v1`, a Literal checked on read): adding a
separate field would change the sealed sha256 of every artifact of a job started before, and resuming such a job
compares its job.json field by field. ARTIFACT_SCHEMA_VERSION is the `/v<N>` of those names.

Sealed artifacts (all but result.json) are these payloads plus a top-level `sha256` of the payload
(core.canonical.seal); the models describe the payload and `SEALED` lists which ones are sealed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ARTIFACT_SCHEMA_VERSION = 1
Candidate = Literal["seed", "incumbent"]


class Artifact(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        """The artifact as written: JSON values, exactly the fields that were given (optional fields an older
        writer did not write stay absent)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


# ----------------------------------------------------------------------------------------------- shared parts
class CellFields(Artifact):
    task: str
    topology: str
    framework: str
    communication: str
    team_size: int
    task_model: str


class GridCell(CellFields):
    method: str


class BundleJson(Artifact):
    """core.models.PromptBundle.to_json()."""

    bundle_sha256: str
    roles: dict[str, str]
    demos: list[Any]
    metadata: dict[str, Any]


class FailureCounts(Artifact):
    n: int
    usable: int
    success: int
    semantic_failures: int
    infrastructure_failures: int
    budget_exhausted: int
    skipped: int


class BudgetSnapshot(Artifact):
    """core.ledger.LedgerSnapshot.as_dict() (budget_exhausted_requests: absent in older results)."""

    maximum: int
    charged: int
    reserved: int
    remaining: int
    attempted: int
    successful: int
    semantic_failures: int
    infrastructure_failures: int
    retries: int
    budget_exhausted_requests: int | None = None


class UsageTotals(Artifact):
    rollouts: int
    model_calls: int
    tool_calls: int
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None


class ArmUsage(Artifact):
    baseline: UsageTotals
    deployed: UsageTotals


class ArmCounts(Artifact):
    baseline: FailureCounts
    deployed: FailureCounts


class ValidationCounts(Artifact):
    baseline: FailureCounts
    incumbent: FailureCounts | None


class EndpointReport(Artifact):
    """What an endpoint said about itself when the start-up check's completion was answered (job.json, the card):
    `simulated` when it answered with the header `X-Simulated-Endpoint: true` or a body flag `"simulated": true`
    (engine/sim says so on every response), `reported_model` the completion's `model` field (None if absent)."""

    role: str  # "task endpoint" | "reflection endpoint"
    index: int
    model_id: str
    simulated: bool
    reported_model: str | None


# ------------------------------------------------------------------------------------------------- artifacts
class SmokeRun(Artifact):
    """A smoke run's scope (`job --smoke N`): every phase on the first N rows of each split."""
    rows_per_split: int


class JobIdentity(Artifact):
    """job.json: the sealed identity of a job (a resumed job must rebuild exactly this)."""

    schema_: Literal["mas-promptbench-job/v1"] = Field(alias="schema")
    protocol_id: str
    protocol_hash: str
    cell: CellFields
    cell_id: str
    method: str
    optimizer_seed: int
    budget: int
    source_tables: list[int]
    in_grid: bool
    protocol_conformant: bool
    nonconformance_reasons: list[str]
    registry_key: str
    runtime_implementation_id: str
    scorer_id: str
    seed_bundle: BundleJson
    condition: dict[str, Any]
    condition_id: str
    split_sha256: str
    split_sizes: dict[str, int]
    task_model_id: str
    reflection_model: str
    endpoint_kind: Literal["simulated", "openai-compatible"]
    # absent in job.json files written before endpoints reported themselves (they stay resumable)
    endpoint_reports: list[EndpointReport] | None = None
    # present only for a method whose implementation changed since v1 of this engine (optimizers.registry
    # method_implementation_id): an in-progress job written before the change is refused in one line naming it
    method_implementation_id: str | None = None
    smoke: SmokeRun | None = None  # a smoke run's only (engine/job/smoke.py): ordinary job.json files unchanged


class Optimization(Artifact):
    """optimization.json: the optimize phase's envelope (error fields only when it failed)."""

    schema_: Literal["mas-promptbench-optimization/v1"] = Field(alias="schema")
    protocol_id: str
    method: str
    cell: CellFields
    cell_id: str
    status: Literal["completed", "failed"]
    failure_kind: str | None
    error_type: str | None = None
    error: str | None = None
    seed_bundle: BundleJson
    training_ids: list[str]
    validation_ids: list[str]
    incumbent_bundle: BundleJson
    stop_reason: str
    budget: BudgetSnapshot
    usage: dict[str, dict[str, Any]]
    failure_counts: FailureCounts
    optimizer_artifact: str


class Selection(Artifact):
    """selection.json: the locked selection on validation; test rows unseal only after it verifies."""

    schema_: Literal["mas-promptbench-locked-selection/v1"] = Field(alias="schema")
    protocol_id: str
    cell: CellFields
    condition_id: str
    optimization_envelope_sha256: str
    seed_bundle: BundleJson
    incumbent_bundle: BundleJson
    deployed_bundle: BundleJson
    selected_candidate: Candidate
    fallback_reason: str | None
    baseline_validation_score: float | None
    incumbent_validation_score: float | None
    validation_delta: float | None
    baseline_validation_id: str
    candidate_validation_id: str | None
    ordered_validation_ids: list[str]
    validation_failure_counts: ValidationCounts
    test_exposed: Literal[False]
    selection_id: str


class HeldOutTest(Artifact):
    """test.json: both arms on the test split, paired per example."""

    schema_: Literal["mas-promptbench-test/v1"] = Field(alias="schema")
    selection_id: str
    condition_id: str
    evaluation_seed: int
    baseline_evaluation_id: str
    deployed_evaluation_id: str
    example_ids: list[str]
    baseline_scores: list[float]
    deployed_scores: list[float]
    baseline_status: list[str]
    deployed_status: list[str]
    valid_for_aggregation: bool
    baseline_mean: float | None
    deployed_mean: float | None
    delta_pp: float | None
    fallback_reason: str | None
    selected_candidate: Candidate
    usage: ArmUsage
    failure_counts: ArmCounts
    search_budget_charged: int


class EvaluationFile(Artifact):
    """evaluations/<evaluation_id>.json: one content-addressed evaluation (records may reference `$blob`s)."""

    schema_: Literal["mas-promptbench-evaluation/v1"] = Field(alias="schema")
    evaluation_id: str
    identity: dict[str, Any]
    failure_counts: FailureCounts
    records: list[dict[str, Any]]


class ResultOptimization(Artifact):
    status: str | None
    failure_kind: str | None
    stop_reason: str | None
    budget: BudgetSnapshot | None
    usage: dict[str, Any] | None
    failure_counts: FailureCounts | None = None
    elapsed_seconds: float | None = None


class ResultSelection(Artifact):
    selection_id: str
    selected_candidate: str | None
    fallback_reason: str | None
    baseline_validation_score: float | None
    incumbent_validation_score: float | None
    validation_delta: float | None
    validation_failure_counts: ValidationCounts | None = None


class ResultHeldOut(Artifact):
    """An invalid test phase may lack its score arrays (aggregation reports it per cell)."""

    example_ids: list[str] | None = None
    baseline_scores: list[float] | None = None
    deployed_scores: list[float] | None = None
    valid_for_aggregation: bool
    baseline_mean: float | None = None
    deployed_mean: float | None = None
    delta_pp: float | None = None
    failure_counts: ArmCounts | None = None


class JobResult(Artifact):
    """result.json: what aggregation reads (not sealed; older files carry `cell` + `method` without grid_cell,
    and no nonconformance_reasons / endpoint_kind)."""

    schema_: Literal["mas-promptbench-job-result/v1"] = Field(alias="schema")
    status: Literal["completed"]
    protocol_id: Literal["mas-promptbench-v1"]
    protocol_conformant: bool
    nonconformance_reasons: list[str] | None = None
    cell: CellFields
    cell_id: str
    method: str
    optimizer_seed: int
    grid_cell: GridCell | None = None
    registry_key: str | None = None
    source_tables: list[int] | None = None
    condition_id: str
    endpoint_kind: str | None = None
    optimization: ResultOptimization
    selection: ResultSelection
    test: ResultHeldOut


# the artifacts by file name; result.json is the only one not sealed
ARTIFACTS: dict[str, type[Artifact]] = {"job": JobIdentity, "optimization": Optimization, "selection": Selection,
                                        "test": HeldOutTest, "result": JobResult, "evaluation": EvaluationFile}
SEALED = frozenset({"job", "optimization", "selection", "test", "evaluation"})
