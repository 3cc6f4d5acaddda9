"""The closed vocabularies of the rollout card and the job, as str-valued enums.

Each member's value is exactly the string stored in card.sqlite / the job artifacts (StrEnum: `str(x)`, f-strings,
JSON and SQLite all give the value), so existing stores resume and existing cards validate unchanged.
"""

from __future__ import annotations

import enum


class NodeStatus(enum.StrEnum):
    """A card node's status (nodes.status, node.status_changed mutations)."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"


class Actor(enum.StrEnum):
    """Who made a mutation (mutations.actor). Judge/probe/reflection clients act as `engine:<component>`."""

    AGENT = "engine:agent"
    RUNNER = "engine:runner"
    SCORER = "engine:scorer"
    LEDGER = "engine:ledger"
    JOB = "engine:job"
    RUN = "engine:run"
    SELECTION = "engine:selection"
    ENDPOINT_POOL = "engine:endpoint_pool"
    REFLECTION = "engine:reflection"
    JUDGE = "engine:judge"
    PROBE = "engine:probe"

    @classmethod
    def of_component(cls, component: str) -> "Actor":
        return cls(f"engine:{component}")


class Phase(enum.StrEnum):
    """The protocol phases as stored (rollouts.phase, phase.completed mutations). The selection phase is stored as
    `validation` (the split it evaluates); the CLI spells it `--phase validate`."""

    OPTIMIZE = "optimize"
    VALIDATION = "validation"
    TEST = "test"


class EventType(enum.StrEnum):
    """events.event_type (and the payload's part_kind). Only engine.recorder writes them."""

    MODEL_CALL = "model_call"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"


class MutationType(enum.StrEnum):
    """mutations.mutation_type."""

    NODE_ADDED = "node.added"
    NODE_STATUS_CHANGED = "node.status_changed"
    EDGE_ADDED = "edge.added"
    ANNOTATION_SET = "annotation.set"
    LEDGER_COMMITTED = "ledger.committed"
    RUN_STATUS_CHANGED = "run.status_changed"
    PHASE_COMPLETED = "phase.completed"
    SELECTION_SEALED = "selection.sealed"
    JOB_RECOVERY = "job.recovery"
    POOL_SUMMARY = "pool.summary"
    POOL_OUTAGE_STARTED = "pool.outage_started"
    POOL_OUTAGE_EXCEEDED = "pool.outage_exceeded"
    POOL_OUTAGE_ENDED = "pool.outage_ended"
    ENDPOINT_EJECTED = "endpoint.ejected"
    ENDPOINT_BACKPRESSURE = "endpoint.backpressure"
    ENDPOINT_READMITTED = "endpoint.readmitted"


class NodeFailureKind(enum.StrEnum):
    """`failure.kind` of a failed / skipped / cancelled node status (not an optimization's FailureKind)."""

    INFRA_ERROR = "infra_error"
    BUDGET_EXHAUSTED = "budget_exhausted"
    AGENT_FAILURE = "agent_failure"
    POOL_OUTAGE = "pool_outage"
    STORAGE_ERROR = "storage_error"
    CANCELLED_BY_PARENT = "cancelled_by_parent"


class StopReason(enum.StrEnum):
    """Why an optimizer stopped (optimization.json `stop_reason`), as the methods report it."""

    ROLLOUT_BUDGET_SPENT = "rollout_budget_spent"
    BUDGET = "budget"
    NUM_TRIALS_COMPLETE = "num_trials_complete"
    FULL_EVAL_PLATEAU = "full_eval_plateau"
    MAXIMUM_SEARCH_DEPTH = "maximum_search_depth"
    MAX_ROUNDS = "max_rounds"
    PATIENCE = "patience"
    IDENTITY_NO_SEARCH = "identity_no_search"
    INFRASTRUCTURE_INVALID = "infrastructure_invalid"
    # a method's model client gave no usable text on K consecutive calls (core.errors.ReflectionUnavailableError;
    # the job's stop, recorded with an infrastructure-invalid optimization, not the method's own)
    REFLECTION_UNAVAILABLE = "reflection_unavailable"
    JUDGE_UNAVAILABLE = "judge_unavailable"
    PROBE_UNAVAILABLE = "probe_unavailable"


# The model ids the simulated endpoint answers to when a job or run has no real endpoint. One value each: the task
# model id is part of every recorded request body (so of its replay key), hence the stored value is kept.
SIMULATED_TASK_MODEL_ID = "simulated-policy"
SIMULATED_REFLECTION_MODEL_ID = "simulated-reflection"
