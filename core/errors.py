"""One exception tree for the engine.

    EngineError
    ├── UsageError                  bad command-line or configuration input (exit code 2)
    │   └── CellError               a --cell that does not parse or contradicts itself
    ├── DataError                   benchmark data missing, malformed, or inconsistent with a manifest
    │   └── SealedSplitError        test rows requested before a verified sealed selection exists
    ├── ArtifactError               a sealed artifact is missing, tampered with, or belongs to another job
    │   └── JobIdentityError        --out holds a different job
    ├── BudgetError                 ledger misuse (over-commit, unknown reservation, open reservations)
    ├── ContractError               an optimizer or topology broke an engine contract
    ├── InfrastructureInvalidError  optimization cannot go on: the endpoints keep failing (seed bundle is kept)
    │   └── ReflectionUnavailableError  a method's model client (reflection, judge, probe) gave no usable text on
    │                               K consecutive calls: the method stops (stop reason `<component>_unavailable`)
    ├── OptimizationFailed          the method failed with a stopping failure kind (contract_failure,
    │                               program_failure, ambiguous_external): optimization.json records it, the job stops
    ├── ScorerError                 a scorer raised on a scored observation (infrastructure, never charged)
    └── InfrastructureError         retryable: the endpoint or transport failed before a scored observation
        ├── EndpointConnectionError connection refused / reset / DNS
        ├── EndpointTimeout         connect, read or pool timeout
        ├── EndpointStatusError     HTTP 408, 429, 5xx (429 carries retry_after)
        ├── BadRequestError         HTTP 400/other 4xx (context overflow included)
        └── MalformedResponseError  not JSON, no choices, empty message

Leaf errors carry structured fields (`kind`, and where useful `status_code`, `retry_after`).
"""

from __future__ import annotations


class EngineError(Exception):
    """Root of every error this engine raises on purpose."""

    kind = "engine_error"
    exit_code = 1


class UsageError(EngineError):
    kind = "usage_error"
    exit_code = 2


class CellError(UsageError):
    kind = "cell_error"


class DataError(EngineError):
    kind = "data_error"
    exit_code = 2


class SealedSplitError(DataError):
    kind = "sealed_split"


class ArtifactError(EngineError):
    kind = "artifact_error"
    exit_code = 2


class JobIdentityError(ArtifactError):
    kind = "job_identity_mismatch"


class BudgetError(EngineError):
    kind = "budget_error"


class ContractError(EngineError):
    kind = "contract_error"


class InfrastructureInvalidError(EngineError):
    """Too many consecutive rollouts ended as infrastructure failures: optimization stops, the job reports it
    (failure_kind infrastructure_invalid) and keeps the seed bundle."""

    kind = "infrastructure_invalid"


class ReflectionUnavailableError(InfrastructureInvalidError):
    """A method's model client (engine/reflection.py: reflection, or the judge / probe on the task endpoints) gave
    the method no usable text on `consecutive` calls in a row (`failure_kind` of the last one, e.g.
    context_length_exceeded, http_status, empty_text). Not an InfrastructureError: a method's
    `except InfrastructureError` (go on without a proposal) does not swallow it, so the method stops and the job
    records an infrastructure-invalid optimization (seed bundle kept, healable) with stop reason
    `<component>_unavailable` instead of charging rollouts for proposals that cannot be made."""

    kind = "reflection_unavailable"

    def __init__(self, message: str, *, component: str, failure_kind: str, consecutive: int, endpoint: str):
        super().__init__(message)
        self.component = component
        self.failure_kind = failure_kind
        self.consecutive = consecutive
        self.endpoint = endpoint

    @property
    def stop_reason(self) -> str:
        return f"{self.component}_unavailable"


class OptimizationFailed(EngineError):
    """The method failed with a failure kind that stops the job (protocol-v1 section 6): the job writes
    optimization.json with the kind and the error, never reaches selection, and a re-run stops the same way."""

    kind = "optimization_failed"

    def __init__(self, message: str, *, failure_kind: str):
        super().__init__(message)
        self.failure_kind = failure_kind


class ScorerError(EngineError):
    """A scorer raised: the rollout is an infrastructure failure (never charged)."""

    kind = "scorer_error"


class InfrastructureError(EngineError):
    """Retryable failure before a scored observation existed."""

    kind = "infrastructure"

    def __init__(self, message: str, *, status_code: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after


class EndpointConnectionError(InfrastructureError):
    kind = "connection_error"


class EndpointTimeout(InfrastructureError):
    kind = "timeout"


class EndpointStatusError(InfrastructureError):
    kind = "http_status"


class BadRequestError(InfrastructureError):
    kind = "bad_request"


class MalformedResponseError(InfrastructureError):
    kind = "malformed_response"
