"""What the exporter removes from a card and how it records it (release_scope.omissions).

1. Credentials are scrubbed from every stream and bundle record (always on; `engine.cards.format.redact.scrub_secrets`).
2. `--redact STREAM.FIELD.PATH[=REASON]` replaces the value at that path (and its mirror in node.added mutations)
   by a marker, then follows every removed string of at least MIN_FOLLOW_CHARS characters wherever else it was
   written: every JSON column of every stream (blob-held values included: rows are resolved here) and the bundle
   records. Each place it was found becomes its own omission (`reason` names the redaction it follows).
3. `rows_affected` of every omission is counted on the final rows with `engine.cards.format.omissions.count_marked`, the
   function the validator re-counts with; an omission whose markers a later removal replaced (count 0) is dropped
   unless the user asked for it.

Annotation payloads are stored once: annotation.set mutations carry `payload_sha256` (the content hash of the
annotation row's final payload) instead of a second copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from core.canonical import content_hash
from engine.cards.format.model import JSON_COLUMNS, PAYLOAD_REF_KEY, Omission
from engine.cards.format.omissions import OMISSION_STREAMS, count_marked
from engine.cards.format.redact import Follower, leaf_strings, mirror_paths, redact_path, scrub_secrets, values_at
from core.errors import ArtifactError

Rows = dict[str, list[dict[str, Any]]]
BUNDLE_COLUMNS = ("roles", "demos", "metadata")
CREDENTIAL_REASON = "credential (API key, authorization header or token) scrubbed by the exporter"


@dataclass(frozen=True)
class Candidate:
    stream: str
    field_path: str
    row_filter: str | None
    reason_code: str
    reason: str
    requested: bool


def json_columns(stream: str) -> tuple[str, ...]:
    return BUNDLE_COLUMNS if stream == "bundles" else JSON_COLUMNS[stream]


def store_annotations_once(rows: Rows) -> list[tuple[int, int]]:
    """Drop the payload copy from annotation.set mutations (after checking it equals the annotation row's);
    return (mutation index, annotation index) pairs for `seal_payload_refs` (rows are replaced, not edited, by
    the removals in between, so positions are the stable link)."""
    index = {(a["target_type"], a["target_id"], a["namespace"], a["sequence"]): i
             for i, a in enumerate(rows["annotations"])}
    links = []
    for j, m in enumerate(rows["mutations"]):
        new = m.get("new_value")
        if m.get("mutation_type") != "annotation.set" or not isinstance(new, dict) or "payload" not in new:
            continue
        i = index.get((m["target_type"], m["target_id"], new.get("namespace"), new.get("sequence")))
        if i is None or rows["annotations"][i]["payload"] != new["payload"]:
            raise ArtifactError(f"store inconsistent: annotation.set mutation {m['sequence']} does not match an "
                                "annotation row")
        m["new_value"] = {**{k: v for k, v in new.items() if k != "payload"}, PAYLOAD_REF_KEY: None}
        links.append((j, i))
    return links


def seal_payload_refs(rows: Rows, links: list[tuple[int, int]]) -> None:
    for j, i in links:
        mutation = rows["mutations"][j]
        mutation["new_value"] = {**mutation["new_value"],
                                 PAYLOAD_REF_KEY: content_hash(rows["annotations"][i]["payload"])}


def _scrub(rows: Rows) -> list[Candidate]:
    out = []
    for stream in OMISSION_STREAMS:
        paths: set[str] = set()
        for i, row in enumerate(rows[stream]):
            cleaned, hits = scrub_secrets(row)
            if hits:
                rows[stream][i] = cleaned
                paths |= hits
        out += [Candidate(stream, p, None, "safety", CREDENTIAL_REASON, False) for p in sorted(paths)]
    return out


def _redact(rows: Rows, stream: str, segments: tuple[str, ...], reason_code: str) -> list[Candidate]:
    label = f"{stream}.{'.'.join(segments)}"
    removed: set[str] = set()
    out = []
    for target, path, mutation_type in [(stream, list(segments), None), *mirror_paths(stream, list(segments))]:
        for i, row in enumerate(rows[target]):
            if mutation_type is not None and row.get("mutation_type") != mutation_type:
                continue
            for value in values_at(row, path):
                removed |= leaf_strings(value)
            rows[target][i] = redact_path(row, path, reason_code)[0]
        out.append(Candidate(target, ".".join(path), None if mutation_type is None
                             else f"mutation_type == '{mutation_type}'", reason_code,
                             f"removed on request (--redact {label})" if mutation_type is None
                             else f"mirror of {label} in the mutation log", True))
    follower = Follower(removed, reason_code)
    for target in OMISSION_STREAMS:
        paths: set[str] = set()
        for row in rows[target]:
            for column in json_columns(target):
                if row.get(column) is not None:
                    row[column] = follower.apply(row[column], column, paths)
        out += [Candidate(target, p, None, reason_code, f"the value removed by --redact {label}, followed here",
                          False) for p in sorted(paths)]
    return out


def remove_values(rows: Rows, redactions: list[tuple[str, tuple[str, ...], str]]) -> list[Omission]:
    """`rows`: the five streams plus `bundles`, resolved; `redactions`: (stream, segments, reason_code)."""
    candidates = _scrub(rows)
    for stream, segments, reason_code in redactions:
        candidates += _redact(rows, stream, segments, reason_code)
    omissions: list[Omission] = []
    seen: set[tuple[str, str, str | None]] = set()
    for c in candidates:
        key = (c.stream, c.field_path, c.row_filter)
        if key in seen:
            continue
        seen.add(key)
        n = count_marked(rows[c.stream], c.field_path, c.row_filter)
        if n or c.requested:
            omissions.append(Omission(stream=c.stream, field_path=c.field_path, row_filter=c.row_filter,
                                      rows_affected=n, reason_code=cast(Any, c.reason_code), reason=c.reason))
    return omissions

