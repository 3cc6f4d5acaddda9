"""Validator findings: a code, a severity, a location (`file:line` or `file`) and a one-line message.

Codes (errors unless marked W_):
    E_LAYOUT_MISSING          a required file of the bundle is absent
    E_ZIP_DUPLICATE           a zip holds the same entry name more than once
    E_UNHASHED_FILE           a file that is neither a stream, a blob nor listed (hashed) in manifest.files
    E_MANIFEST_INVALID        manifest.json does not parse or lacks required keys
    E_VERSION_UNSUPPORTED     format or major format_version not supported
    E_HASH_MISMATCH           a stream or listed file's sha256 differs from the manifest
    E_COUNT_MISMATCH          row or byte count of a stream, or blob summary, differs from the manifest
    E_CARD_ID_MISMATCH        card_id is not the digest of the stream hashes
    E_JSON                    a line is not one canonical JSON object
    E_ROW_SCHEMA              a row violates its stream's schema (Table 10 columns and types)
    E_DUPLICATE_ID            two rows share an identity (event_id, node_id, edge, annotation key)
    E_DISCRIMINATOR           payload.part_kind != event_type, or new_value.mutation_type != mutation_type
    E_EVENT_SEQUENCE          events of one task_execution_id not strictly increasing in file order
    E_EVENT_SEQUENCE_GAP      events of one task_execution_id not contiguous from 0 (lost writes)
    E_MUTATION_SEQUENCE       mutation sequence not strictly increasing and contiguous from 0 per run
    E_ANNOTATION_SEQUENCE     annotation sequences of one (target, namespace) not unique and contiguous from 0
    E_APPEND_ONLY             against an earlier card (--previous): a log stream is not a byte prefix of the new
    E_REPLAY_INVALID          a mutation cannot apply to the replayed state (unknown target, stale old_value)
    E_REPLAY_MISMATCH         replaying mutations does not reproduce a nodes/edges/annotations row
    E_EDGE_CYCLE              an edge closes a cycle (checked after every edge.added, in sequence order)
    E_NAMESPACE_UNDECLARED    an annotation namespace is not declared in the manifest
    E_NAMESPACE_SCHEMA        an annotation payload violates the schema its namespace declares
    E_REFERENCE               a row names a node, parent or target that does not exist
    E_LEVEL                   a node's level is not its parent's level + 1 (0 for roots)
    E_FAILURE_INVISIBLE       a failed/cancelled node lacks a status-change mutation with a reason
    W_RUN_NOT_TERMINAL        the run's terminal status is not in the mutation log (interrupted run)
    E_BLOB_MISSING            a blob reference does not resolve to blobs/<hex[:2]>/<hex>
    E_BLOB_HASH_MISMATCH      a blob's bytes do not hash to its name, or its size differs from the reference
    E_BLOB_ORPHAN             a blob no row references
    E_BLOB_REF_INVALID        a malformed blob reference
    E_TRUNCATED               a truncation marker inside a value (values are never truncated)
    E_REGISTRY                reporting_rules.json or a rule entry is malformed or incomplete
    E_REGISTRY_INCOMPLETE     a reported number has no rule entry reproducing it
    E_DROPS_MISSING           a rule entry's drops manifest is absent
    E_DROPS_INVALID           a drops manifest names streams, fields or namespaces the card lacks
    E_RELEASE_SCOPE           release scope class/omissions invalid, or a redaction marker no omission declares
    E_REDACTION_COUNT         an omission's rows_affected differs from the rows that hold its markers
    E_INLINE_CAP              a JSON value over the inline cap (default 64 KB) written inline, not as a blob
    E_ATTEMPT_MISSING         a rollout claims attempts whose calls are not in the events
    E_ATTEMPT_UNCLAIMED       an errored call belongs to no attempt its rollout claims (or to no rollout)
    E_ORPHAN_RUNNING          a node still `running` in a finished or failed run
    E_ROLLOUT_INCONSISTENT    a rollout's recorded outcome contradicts its node status or its score
    E_RULE_MISMATCH           a recorded rule's output differs from its recomputation over the streams
    E_RULE_IMPLEMENTATION     a known rule recorded by code whose closure hash differs from this engine's (replaced)
    E_DROPS_MISMATCH          a recorded drops manifest differs from the recomputed one
    E_HEADLINE_MISMATCH       a headline number (or the failure counts beside it) differs from the recomputation
    E_PHASE_MISMATCH          numbers in a phase.completed mutation disagree with the rollouts they summarize
    E_MANIFEST_MISMATCH       a fact the manifest states (run node status, vocabularies, bundle count) is untrue
    E_HEADLINE_UNVERIFIED     a headline number names a rule this validator cannot recompute
    W_RULE_UNKNOWN            a registry entry of a rule this engine does not have (cannot be recomputed)
    W_RULE_IMPLEMENTATION     a rule declared re-registered whose closure hash differs from this engine's (re-run)
    E_BUNDLE_INVALID          a bundles.jsonl row is not a bundle record
    E_BUNDLE_DIGEST           a bundle record's roles/demos/metadata do not hash to its bundle_sha256
    E_BUNDLE_MISSING          a test rollout ran a bundle the card has no record of
    E_IDENTITY_MISMATCH       condition_id, job_sha256, an evaluation id or selection_id is not the hash of what the
                              card's run.derivation says it derives from (or a 1.2 job card lacks run.derivation)
    E_ARM_IDS                 an evaluation arm does not hold exactly its split's ids, once each, in order, in its
                              phase, with its bundle (engine.cards.format.arms)
    E_ARM_SEED                a rollout's request seed is not its paired evaluation seed, or a call's seed not its
                              member/turn seed
    E_SELECTION_MISMATCH      the recorded selection differs from the decision re-derived from the validation
                              rollouts (strictly better, fallbacks; engine.cards.format.decisions)
    E_REQUEST_KEY             a model call's request does not hash to its request_key (the key it is replayed by)
    E_ATTRIBUTION             a model call's payload role/member/turn, worker_binding_key and turn node disagree
    E_PROMPT_MISMATCH         a recorded request's system prompt is not the bundle's role text plus the contract
    E_FAILURE_KIND            a usable rollout whose claimed final attempt has an errored call (infrastructure)
    E_ATTEMPT_COUNT           a rollout's events hold an attempt beyond the count it claims
    E_BUDGET_MISMATCH         the optimize phase's budget summary differs from what its rollouts give
    E_RECOVERY_UNFOUNDED      a job.recovery whose reasons no earlier infrastructure-failure claim records, or that
                              supersedes a phase summary without setting its artifact aside
    E_TIME_ORDER              timestamps out of order (mutations by sequence, event start/end, node create/update)
    E_USAGE_MISMATCH          a rollout's recorded usage differs from its final attempt's answered calls
    E_CONFORMANCE_CLAIM       protocol conformance claimed while an endpoint reported itself simulated
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Problem:
    code: str
    location: str
    message: str

    @property
    def severity(self) -> Severity:
        return Severity.WARNING if self.code.startswith("W_") else Severity.ERROR

    def line(self) -> str:
        return f"{self.code} {self.location}: {self.message}"


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity is Severity.ERROR]
