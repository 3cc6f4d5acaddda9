"""Pydantic models for everything persisted or exchanged between layers.

Persisted/exported models forbid extra keys and carry a schema_version. Values that only live in memory are
frozen dataclasses or frozen models.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.canonical import content_hash

SCHEMA_VERSION = 1
# the keys of a topology's output metadata that hold produced text (RolloutRecord.without_outputs)
OUTPUT_METADATA = ("role_outputs", "last_tool_result")


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RolloutStatus(str, enum.Enum):
    SUCCESS = "success"
    SEMANTIC_FAILURE = "semantic_failure"
    INFRASTRUCTURE_FAILURE = "infrastructure_failure"

    @property
    def usable(self) -> bool:
        return self is not RolloutStatus.INFRASTRUCTURE_FAILURE


class FailureKind(str, enum.Enum):
    """Why an optimization failed (protocol-v1 section 6, optimization.json `failure_kind`).

    infrastructure_invalid  the endpoints kept failing: reportable, the seed bundle is kept
    contract_failure        the method broke an engine contract (ContractError, BudgetError, SealedSplitError):
                            the job stops
    program_failure         any other exception inside the method (a bug): the job stops
    ambiguous_external      the method failed while ledger reservations were still open, so which rollouts were
                            charged is unknown: the job stops (takes precedence over the two above)
    """

    INFRASTRUCTURE_INVALID = "infrastructure_invalid"
    CONTRACT_FAILURE = "contract_failure"
    PROGRAM_FAILURE = "program_failure"
    AMBIGUOUS_EXTERNAL = "ambiguous_external"

    @property
    def reportable(self) -> bool:
        return self is FailureKind.INFRASTRUCTURE_INVALID

    @classmethod
    def of(cls, error_kind: str, open_reservations: int) -> "FailureKind":
        """The kind for an exception whose core.errors `kind` is `error_kind`, raised with `open_reservations`
        ledger slots still reserved (pure: the caller passes both values)."""
        if error_kind in ("infrastructure_invalid", "infrastructure", "connection_error", "timeout", "http_status",
                          "bad_request", "malformed_response") and open_reservations == 0:
            return cls.INFRASTRUCTURE_INVALID
        if open_reservations > 0:
            return cls.AMBIGUOUS_EXTERNAL
        if error_kind in ("contract_error", "budget_error", "sealed_split"):  # a method reaching for test rows
            return cls.CONTRACT_FAILURE
        return cls.PROGRAM_FAILURE


class Cell(Frozen):
    """(task, topology, framework, communication format, team size, task model)."""

    task: str
    topology: str
    framework: str = "native"
    communication: str = "freeform"
    team_size: int = 1
    task_model: str = "qwen"


class PromptBundle(Frozen):
    """One system prompt per role, plus demos and metadata. Digest = sha256 of canonical JSON of all three."""

    roles: dict[str, str]
    demos: tuple[Any, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("roles")
    @classmethod
    def _non_empty(cls, roles: dict[str, str]) -> dict[str, str]:
        if not roles:
            raise ValueError("a bundle needs at least one role")
        for name, text in roles.items():
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"role {name!r} has an empty prompt")
        return roles

    @property
    def digest(self) -> str:
        return content_hash({"roles": self.roles, "demos": list(self.demos), "metadata": self.metadata})

    def to_json(self) -> dict[str, Any]:
        return {"roles": dict(self.roles), "demos": list(self.demos), "metadata": dict(self.metadata),
                "bundle_sha256": self.digest}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "PromptBundle":
        bundle = cls(roles=data["roles"], demos=tuple(data.get("demos", ())), metadata=data.get("metadata", {}))
        expected = data.get("bundle_sha256")
        if expected is not None and expected != bundle.digest:
            raise ValueError("bundle_sha256 does not match the bundle content")
        return bundle


class Row(Frozen):
    """One benchmark example. `task` is what the MAS may see; `gold` is scorer-private and never sent to a model."""

    id: str
    dataset: str
    task: dict[str, Any]
    gold: dict[str, Any] = Field(default_factory=dict, repr=False)

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "dataset": self.dataset, "task": self.task}


class Usage(Frozen):
    """The five telemetry counters. Token counts the server did not report stay None (never 0)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    n_llm_calls: int = 0
    n_tool_calls: int = 0

    @classmethod
    def of_call(cls, usage: Any) -> "Usage":
        """One model call's usage from a response's `usage` object (unreported or non-integer counts stay None)."""
        got = usage if isinstance(usage, dict) else {}

        def count(field: str) -> int | None:
            value = got.get(field)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return cls(prompt_tokens=count("prompt_tokens"), completion_tokens=count("completion_tokens"),
                   total_tokens=count("total_tokens"), n_llm_calls=1)

    @classmethod
    def total(cls, usages: "Iterable[Usage]") -> "Usage":
        return sum(usages, cls())

    def call_counts(self) -> dict[str, int | None]:
        """The model-call counters as reported in optimization.json / test.json usage blocks."""
        return {"model_calls": self.n_llm_calls, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "total_tokens": self.total_tokens}

    def __add__(self, other: "Usage") -> "Usage":
        def add(a: int | None, b: int | None) -> int | None:
            if a is None and b is None:
                return None
            return (a or 0) + (b or 0)

        return Usage(
            prompt_tokens=add(self.prompt_tokens, other.prompt_tokens),
            completion_tokens=add(self.completion_tokens, other.completion_tokens),
            total_tokens=add(self.total_tokens, other.total_tokens),
            n_llm_calls=self.n_llm_calls + other.n_llm_calls,
            n_tool_calls=self.n_tool_calls + other.n_tool_calls,
        )


class AgentOutput(Frozen):
    """What a topology returns for one row: the final text and/or the final tool calls of the answering agent."""

    text: str | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()
    selected_member: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Score(Frozen):
    """A scorer's verdict: 0/1 value, feedback text for reflective methods, and whether the answer was malformed."""

    value: float
    feedback: str
    malformed: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


class RolloutRecord(BaseModel):
    """The record of one full multi-agent execution of one row (after retries)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    rollout_id: str
    example_id: str
    phase: str
    status: RolloutStatus
    score: float | None = None
    feedback: str | None = None
    final_output: AgentOutput | None = None
    usage: Usage = Field(default_factory=Usage)
    request_seed: int
    bundle_sha256: str
    attempts: int = 1
    error_kind: str | None = None
    error: str | None = None
    budget_exhausted: bool = False
    charged: bool = False
    replayed: bool = False
    latency_seconds: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def usable(self) -> bool:
        return self.status.usable and not self.budget_exhausted

    def without_outputs(self) -> RolloutRecord:
        """This record without the texts a rollout produced: its final output and, in the topology's metadata,
        each role's output and the last tool result (the store holds them all). What a phase keeps of every
        rollout it ran, so that memory does not grow with response size beyond what is in flight."""
        topology = self.metadata.get("topology")
        update: dict[str, Any] = {"final_output": None}
        if isinstance(topology, dict) and any(k in topology for k in OUTPUT_METADATA):
            kept = {k: v for k, v in topology.items() if k not in OUTPUT_METADATA}
            update["metadata"] = {**self.metadata, "topology": kept}
        return self.model_copy(update=update)


def rollout_usage_totals(records: Sequence[RolloutRecord]) -> dict[str, Any]:
    """Usage summed over rollouts (tokens a server did not report stay None unless another rollout reported them)."""
    total = Usage.total(r.usage for r in records)
    counts = total.call_counts()
    return {"rollouts": len(records), "model_calls": counts["model_calls"], "tool_calls": total.n_tool_calls,
            "prompt_tokens": counts["prompt_tokens"], "completion_tokens": counts["completion_tokens"],
            "total_tokens": counts["total_tokens"]}
