"""`card export`: RUN_DIR/card.sqlite (+ job.json, result.json) -> a rollout-card bundle (spec 4.1).

Rows keep the store's append order (rowid; mutations by sequence), so a later export of the same run extends each
stream as a byte prefix. Every JSON column is resolved from the store's blobs, scrubbed of credentials, optionally
redacted, then re-externalized with the same 64 KB inline cap: the card's blobs are exactly the referenced ones.
Nothing depends on the clock: created_at is the store's last recorded timestamp.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.artifact_parse import parse_artifact
from core.artifacts import Artifact, JobIdentity, JobResult, Optimization
from core.blobs import externalize, resolve
from core.canonical import content_hash, sha256_hex
from engine.cards.format.lines import encode_lines
from engine.cards.format.model import (BUNDLES_FILE, COLUMNS, FORMAT, FORMAT_VERSION, INLINE_CAP_BYTES, JSON_COLUMNS,
                              REASON_CODES, REGISTRY_FILE, RELEASE_CLASSES, SEQUENCE_SCOPE, STREAMS, ReleaseScope)
from engine.cards.format.redact import scrub_secrets
from core.errors import ArtifactError, UsageError
from core.seeds import seed_derivation
from engine.cards.bundle import Bundle, blob_path, stream_path
from engine.cards.bundles import read_bundles
from engine.cards.derivation import derivation, read_object
from engine.cards.manifest import json_bytes, set_manifest
from engine.cards.namespaces import declare_namespaces
from engine.cards.producer import producer
from engine.cards.removal import remove_values, seal_payload_refs, store_annotations_once
from engine.cards.rescore import apply_rule

ORDER = {"events": "rowid", "nodes": "rowid", "edges": "rowid", "annotations": "rowid", "mutations": "sequence"}


@dataclass(frozen=True)
class Redaction:
    """`--redact STREAM.FIELD.PATH[=REASON_CODE]` (reason defaults to pii)."""

    stream: str
    segments: tuple[str, ...]
    reason_code: str = "pii"

    @classmethod
    def parse(cls, text: str) -> "Redaction":
        path, _, reason = text.partition("=")
        parts = path.split(".")
        if len(parts) < 2 or parts[0] not in STREAMS or not all(parts):
            raise UsageError(f"--redact expects STREAM.FIELD[.SUBFIELD...] with STREAM one of {', '.join(STREAMS)}"
                             f", got {text!r}")
        if parts[1] not in COLUMNS[parts[0]]:
            raise UsageError(f"--redact {text!r}: {parts[0]} has no column {parts[1]!r}")
        reason = reason or "pii"
        if reason not in REASON_CODES:
            raise UsageError(f"--redact reason must be one of {', '.join(REASON_CODES)}, got {reason!r}")
        return cls(parts[0], tuple(parts[1:]), reason)

    @property
    def field_path(self) -> str:
        return ".".join(self.segments)


def read_store(db_path: Path) -> tuple[dict[str, list[dict[str, Any]]], str | None]:
    """The five streams as resolved rows (blob references replaced by values), plus the store's run id."""
    if not db_path.is_file():
        raise ArtifactError(f"no store at {db_path}")
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        blobs = {d: bytes(c) for d, c in conn.execute("SELECT sha256, content FROM blobs")}

        def get(digest: str) -> bytes:
            if digest not in blobs:
                raise ArtifactError(f"store {db_path} lacks blob {digest}")
            return blobs[digest]

        rows: dict[str, list[dict[str, Any]]] = {}
        for stream in STREAMS:
            columns = COLUMNS[stream]
            cursor = conn.execute(f"SELECT {', '.join(columns)} FROM {stream} ORDER BY {ORDER[stream]}")  # noqa: S608
            out = []
            for values in cursor:
                row = dict(zip(columns, values))
                for column in JSON_COLUMNS[stream]:
                    if row[column] is not None:
                        row[column] = resolve(json.loads(row[column]), get)
                out.append(row)
            rows[stream] = out
        run = conn.execute("SELECT run_id FROM nodes WHERE parent_id IS NULL ORDER BY rowid LIMIT 1").fetchone()
    finally:
        conn.close()
    return rows, run[0] if run else None


def _externalize_rows(rows: dict[str, list[dict[str, Any]]], files: dict[str, bytes]) -> None:
    def put(digest: str, data: bytes) -> None:
        files[blob_path(digest)] = data

    for stream in STREAMS:
        for row in rows[stream]:
            for column in JSON_COLUMNS[stream]:
                if row.get(column) is not None:
                    row[column] = externalize(row[column], put, INLINE_CAP_BYTES)


def _validated(data: dict[str, Any] | None, model: type[Artifact], name: str) -> dict[str, Any] | None:
    """A job artifact the card carries must match its model (core.artifacts); a sealed one without its sha256."""
    if data is not None:
        parse_artifact(model, {k: v for k, v in data.items() if k != "sha256"}, name)
    return data


def optimization_summary(optimization: dict[str, Any] | None) -> dict[str, Any] | None:
    """The card's view of optimization.json: how it ended, and the method's model-call failures per component and
    kind (`model_call_failures`: only the components with any; {} when every reflection, judge and probe call gave
    the method text)."""
    if optimization is None:
        return None
    usage = optimization.get("usage") or {}
    return {
        "status": optimization.get("status"), "failure_kind": optimization.get("failure_kind"),
        "stop_reason": optimization.get("stop_reason"), "error_type": optimization.get("error_type"),
        "charged_rollouts": (optimization.get("budget") or {}).get("charged"),
        "model_call_failures": {name: dict(part["failures"]) for name, part in sorted(usage.items())
                                if isinstance(part, dict) and part.get("failures")},
    }


def run_metadata(run_dir: Path, rows: dict[str, list[dict[str, Any]]], run_id: str | None) -> dict[str, Any]:
    job = _validated(read_object(run_dir / "job.json"), JobIdentity, "job.json") or {}
    optimization = _validated(read_object(run_dir / "optimization.json"), Optimization, "optimization.json")
    result = _validated(read_object(run_dir / "result.json"), JobResult, "result.json") or {}
    roots = [n for n in rows["nodes"] if n["parent_id"] is None]
    root = roots[0] if roots else {}
    job_note: dict[str, Any] = next((a["payload"] for a in rows["annotations"] if a["namespace"] == "mpb.job"
                     and a["target_id"] == root.get("node_id")), {})
    terminal = root.get("status") in ("completed", "failed", "cancelled")
    test = result.get("test") or {}
    test_keys = ("baseline_mean", "deployed_mean", "delta_pp", "valid_for_aggregation", "failure_counts")
    selection = result.get("selection") or {}
    smoke = job.get("smoke", job_note.get("smoke"))  # a smoke run only (engine/job/smoke.py)
    return {
        **({"smoke": smoke} if smoke is not None else {}),
        "run_id": run_id, "cell_id": job.get("cell_id", run_id), "cell": job.get("cell", job_note.get("cell")),
        "method": job.get("method", job_note.get("method")),
        "seed": job.get("optimizer_seed", job_note.get("optimizer_seed")),
        "budget": job.get("budget", job_note.get("budget")),
        "status": result.get("status") or root.get("status"), "run_node_status": root.get("status"),
        "endpoint_kind": job.get("endpoint_kind", job_note.get("endpoint_kind")),
        "protocol_id": job.get("protocol_id"),
        "protocol_conformant": job.get("protocol_conformant", job_note.get("protocol_conformant")),
        "nonconformance_reasons": job.get("nonconformance_reasons", job_note.get("nonconformance_reasons")),
        "condition_id": job.get("condition_id"), "scorer_id": job.get("scorer_id"),
        "seed_derivation": seed_derivation(job.get("condition")),
        "task_model_id": job_note.get("task_model_id"), "job_sha256": job.get("sha256"),
        "started_at": root.get("created_at"), "completed_at": root.get("updated_at") if terminal else None,
        "selection": {k: selection.get(k) for k in ("selection_id", "selected_candidate", "fallback_reason")}
        if selection else None,
        "test": {k: test.get(k) for k in test_keys if k in test} if test else None,
        "optimization": optimization_summary(optimization),
        "policy_version": None, "derivation": derivation(run_dir),
    }


def export_card(run_dir: str | Path, out: str | Path | None = None, *, as_zip: bool = False,
                redactions: list[Redaction] | None = None, release_class: str | None = None,
                license: str | None = None) -> Bundle:
    """Build the bundle of RUN_DIR; write it to `out` (a directory, or a .zip with `as_zip`) when given."""
    run_dir = Path(run_dir)
    rows, run_id = read_store(run_dir / "card.sqlite")
    records: dict[str, list[dict[str, Any]]] = {**rows, "bundles": read_bundles(run_dir)}
    links = store_annotations_once(records)
    omissions = remove_values(records, [(r.stream, r.segments, r.reason_code) for r in redactions or []])
    seal_payload_refs(records, links)
    rows = {s: records[s] for s in STREAMS}
    files: dict[str, bytes] = {}
    _externalize_rows(rows, files)
    streams = {}
    for stream in STREAMS:
        data = encode_lines(rows[stream])
        files[stream_path(stream)] = data
        streams[stream] = {"path": stream_path(stream), "sha256": sha256_hex(data), "rows": len(rows[stream]),
                           "bytes": len(data), "sequence_scope": SEQUENCE_SCOPE[stream]}
    if records["bundles"]:
        files[BUNDLES_FILE] = encode_lines(records["bundles"])
    blob_sizes = [len(v) for k, v in files.items() if k.startswith("blobs/")]
    klass = release_class or ("redacted_trace" if omissions else "full_trace")
    if klass not in RELEASE_CLASSES:
        raise UsageError(f"--release-class must be one of {', '.join(RELEASE_CLASSES)}, got {klass!r}")
    scope = ReleaseScope.model_validate({"class": klass, "license": license, "omissions": omissions,
                                         "access": {"gated": klass == "gated_trace", "url": None, "terms": None},
                                         "redistribution": "full" if not omissions else "redacted",
                                         "source": {"producer": "mas-promptbench-engine", "schema_fit": "full-trace"}})
    timestamps = [m["created_at"] for m in rows["mutations"] if m.get("created_at")]
    run = scrub_secrets(run_metadata(run_dir, rows, run_id))[0]
    manifest: dict[str, Any] = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "card_id": "sha256:" + content_hash({s: e["sha256"] for s, e in streams.items()}),
        "created_at": max(timestamps) if timestamps else None,
        "producer": producer(), "run": run, "streams": streams,
        "blobs": {"inline_cap_bytes": INLINE_CAP_BYTES, "hash": "sha256", "count": len(blob_sizes),
                  "total_bytes": sum(blob_sizes), "path": "blobs/"},
        "bundles": {"path": BUNDLES_FILE, "count": len(records["bundles"])},
        "namespaces": declare_namespaces(rows["annotations"], rows["mutations"]),
        "vocabularies": {"event_types": sorted({e["event_type"] for e in rows["events"]}),
                         "mutation_types": sorted({m["mutation_type"] for m in rows["mutations"]}),
                         "node_statuses": sorted({n["status"] for n in rows["nodes"]})},
        "release_scope": scope.dump(), "reporting_rules": REGISTRY_FILE, "files": {}, "reported": [],
    }
    bundle = Bundle(files)
    bundle.files[REGISTRY_FILE] = json_bytes([])
    set_manifest(bundle, manifest)
    if (run.get("test") or {}).get("baseline_mean") is not None:
        _report_headline(bundle, run, bool(redactions))
    if out is not None:
        target = Path(out)
        if as_zip:
            bundle.write_zip(target if target.suffix == ".zip" else target.with_name(target.name + ".zip"))
        else:
            bundle.write_dir(target)
    return bundle


HEADLINE_ARMS = {"baseline_mean": ("baseline",), "deployed_mean": ("deployed",),
                 "delta_pp": ("baseline", "deployed"), "valid_for_aggregation": ("baseline", "deployed")}


def _report_headline(bundle: Bundle, run: dict[str, Any], redacted: bool) -> None:
    """Record the protocol rule and list result.json's test numbers as the card's headline, each with the
    denominator and failure counts of the arms it is computed from."""
    outcome = apply_rule(bundle, "mpb.protocol")
    if outcome.result.status != "ok" and redacted:
        raise UsageError(f"the redaction removes what the headline rule mpb.protocol reads: "
                         f"{outcome.result.message}; redact other fields or publish a derived_view card")
    values, arms = outcome.result.values, outcome.result.arms
    reported = [{"name": name, "value": run["test"][name], "source": "result.json:test",
                 "rule_id": outcome.entry.rule_id,
                 "arms": {a: {"denominator": arms[a]["denominator"], "counts": arms[a]["counts"]}
                          for a in HEADLINE_ARMS[name] if a in arms}}
                for name in HEADLINE_ARMS if name in values and name in run["test"]]
    set_manifest(bundle, {**json.loads(bundle.files["manifest.json"]), "reported": reported})
