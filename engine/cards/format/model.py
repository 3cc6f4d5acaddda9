"""Row schemas of the five streams (paper Table 10, with run_id and events.node_id) and the bundle's JSON objects:
manifest, release scope, reporting-rule entry, drops manifest (rollout-card spec 4.1-4.6).

Stream rows and the manifest tolerate extra keys (`extra="allow"`): the format requires consumers to ignore
unknown columns and minor-version additions. Objects only this engine writes and reads back (rule entries, drops
manifests, release scope) forbid extras.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

FORMAT = "rollout-card"
FORMAT_VERSION = "1.2.0"  # 1.1: payload_sha256 in annotation.set, bundles.jsonl, failure counts beside headlines;
# 1.2: run.derivation (what identities and decisions derive from)
SUPPORTED_MAJOR = 1
INLINE_CAP_BYTES = 65536
STREAMS: tuple[str, ...] = ("events", "nodes", "edges", "annotations", "mutations")
SEQUENCE_SCOPE: dict[str, str | None] = {"events": "task_execution_id", "nodes": None, "edges": None,
                                         "annotations": "target_type,target_id,namespace", "mutations": "run"}
REGISTRY_FILE = "reporting_rules.json"
RELEASE_CLASSES = ("full_trace", "redacted_trace", "gated_trace", "derived_view", "metadata_only")
REASON_CODES = ("pii", "license", "size", "source_policy", "unavailable_in_source", "safety")
REDACTED_KEY = "$redacted"
REDACTED_TOKEN = "[redacted"  # in-string form: "[redacted]" (credentials) or "[redacted:<reason_code>]" (followed)
PAYLOAD_REF_KEY = "payload_sha256"  # annotation.set mutations reference their annotation's payload by hash
BUNDLES_FILE = "bundles.jsonl"


def _timestamp(value: str | None) -> str | None:
    if value is None:
        return value
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an RFC 3339 timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp without a UTC offset: {value!r}")
    return value


class _Row(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, frozen=True)
    run_id: StrictStr | None = None


class EventRow(_Row):
    event_id: StrictStr
    task_execution_id: StrictStr
    node_id: StrictStr | None = None
    worker_binding_key: StrictStr | None
    sequence: StrictInt = Field(ge=0)
    event_type: StrictStr
    turn_id: StrictStr | None
    payload: dict[str, Any]
    started_at: StrictStr | None
    completed_at: StrictStr | None
    policy_version: StrictStr | None

    _ts = field_validator("started_at", "completed_at")(_timestamp)


class NodeRow(_Row):
    node_id: StrictStr
    parent_id: StrictStr | None
    instance_key: StrictStr | None
    task_key: StrictStr | None
    status: Literal["pending", "ready", "running", "completed", "failed", "cancelled", "blocked", "skipped"]
    assigned_worker_key: StrictStr | None
    level: StrictInt = Field(ge=0)
    created_at: StrictStr
    updated_at: StrictStr

    _ts = field_validator("created_at", "updated_at")(_timestamp)


class EdgeRow(_Row):
    source_node_id: StrictStr
    target_node_id: StrictStr
    status: Literal["pending", "satisfied", "invalidated"]
    created_at: StrictStr
    updated_at: StrictStr

    _ts = field_validator("created_at", "updated_at")(_timestamp)


class AnnotationRow(_Row):
    target_type: Literal["node", "edge", "run"]
    target_id: StrictStr
    namespace: StrictStr = Field(min_length=1)
    sequence: StrictInt = Field(ge=0)
    payload: dict[str, Any]
    created_at: StrictStr

    _ts = field_validator("created_at")(_timestamp)


class MutationRow(_Row):
    sequence: StrictInt = Field(ge=0)
    mutation_type: StrictStr
    target_type: StrictStr
    target_id: StrictStr
    actor: StrictStr | None
    old_value: dict[str, Any] | None
    new_value: dict[str, Any] | None
    reason: StrictStr | None
    created_at: StrictStr

    _ts = field_validator("created_at")(_timestamp)


ROW_MODELS: dict[str, type[_Row]] = {"events": EventRow, "nodes": NodeRow, "edges": EdgeRow,
                                     "annotations": AnnotationRow, "mutations": MutationRow}
# The columns each stream carries in this engine's cards, in paper order (run_id and node_id are our additions).
COLUMNS: dict[str, tuple[str, ...]] = {
    "events": ("event_id", "run_id", "task_execution_id", "node_id", "worker_binding_key", "sequence", "event_type",
               "turn_id", "payload", "started_at", "completed_at", "policy_version"),
    "nodes": ("node_id", "run_id", "parent_id", "instance_key", "task_key", "status", "assigned_worker_key", "level",
              "created_at", "updated_at"),
    "edges": ("source_node_id", "target_node_id", "run_id", "status", "created_at", "updated_at"),
    "annotations": ("target_type", "target_id", "namespace", "sequence", "payload", "created_at", "run_id"),
    "mutations": ("sequence", "run_id", "mutation_type", "target_type", "target_id", "actor", "old_value",
                  "new_value", "reason", "created_at"),
}
JSON_COLUMNS: dict[str, tuple[str, ...]] = {"events": ("payload",), "nodes": (), "edges": (),
                                            "annotations": ("payload",), "mutations": ("old_value", "new_value")}


# ----------------------------------------------------------------------------------------------- bundle objects
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Omission(_Strict):
    stream: str
    field_path: str
    row_filter: str | None = None
    rows_affected: int = Field(ge=0)
    reason_code: Literal["pii", "license", "size", "source_policy", "unavailable_in_source", "safety"]
    reason: str


class ReleaseScope(_Strict):
    class_: Literal["full_trace", "redacted_trace", "gated_trace", "derived_view", "metadata_only"] = Field(
        alias="class")
    license: str | None = None
    access: dict[str, Any] = Field(default_factory=lambda: {"gated": False, "url": None, "terms": None})
    redistribution: str = "full"
    source: dict[str, Any] = Field(default_factory=dict)
    omissions: list[Omission] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class StreamEntry(BaseModel):
    model_config = ConfigDict(extra="allow")
    path: str
    sha256: str
    rows: int
    bytes: int
    sequence_scope: str | None = None


class BlobSummary(BaseModel):
    model_config = ConfigDict(extra="allow")
    inline_cap_bytes: int = INLINE_CAP_BYTES
    hash: Literal["sha256"] = "sha256"
    count: int
    total_bytes: int


class NamespaceDecl(BaseModel):
    model_config = ConfigDict(extra="allow")
    owner: str
    description: str
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")


class FileEntry(BaseModel):
    model_config = ConfigDict(extra="allow")
    sha256: str
    bytes: int


class ArmCounts(BaseModel):
    """Beside every headline number: the denominator and failure counts of each arm it is computed from."""

    model_config = ConfigDict(extra="allow")
    denominator: int
    counts: dict[str, int]


class ReportedNumber(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    value: Any
    source: str
    rule_id: str
    arms: dict[str, ArmCounts] = Field(default_factory=dict)


class Manifest(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    format: str
    format_version: str
    card_id: str
    created_at: str | None = None
    producer: dict[str, Any]
    run: dict[str, Any]
    streams: dict[str, StreamEntry]
    blobs: BlobSummary
    namespaces: dict[str, NamespaceDecl]
    release_scope: ReleaseScope
    reporting_rules: str = REGISTRY_FILE
    files: dict[str, FileEntry] = Field(default_factory=dict)
    reported: list[ReportedNumber] = Field(default_factory=list)


class Implementation(_Strict):
    ref: str
    version: str
    sha256: str


class RuleEntry(_Strict):
    rule_id: str
    name: str
    kind: Literal["original", "recovered", "regrade", "diagnostic"]
    description: str
    implementation: Implementation
    config: dict[str, Any]
    view: str
    input_streams: list[str]
    output_target: dict[str, Any]
    drops_manifest: str
    # the producer declares it registered this rule again under its name (its code may differ from the reference
    # engine's): a different implementation hash is then a warning, not an error. Absent from entries by default.
    re_registered: bool | None = None


class RowsRead(_Strict):
    count: int = Field(ge=0)
    sequence_min: int | None = None
    sequence_max: int | None = None


class ReadRecord(_Strict):
    stream: str
    namespace: str | None = None
    fields: list[str]
    rows: RowsRead
    access: Literal["observed", "declared"]


class FilterRecord(_Strict):
    expr: str
    rows_removed: int = Field(ge=0)
    reason: str


class SemanticLoss(_Strict):
    loss_class: str
    affected_analysis: str
    declaration_kind: Literal["observed", "author_declared", "source_missing", "source_malformed"]
    reason: str


class DropsManifest(_Strict):
    rule_id: str
    reads: list[ReadRecord]
    filters: list[FilterRecord]
    collapses: list[str]
    semantic_losses: list[SemanticLoss]


class BundleRecord(_Strict):
    """A prompt bundle as a first-class card record (bundles.jsonl): role texts, demos, metadata, digest and what
    the run used it as (seed, incumbent, deployed)."""

    bundle_sha256: str
    roles: dict[str, Any]
    demos: list[Any]
    metadata: dict[str, Any]
    used_as: list[str]


def is_redacted(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {REDACTED_KEY}
