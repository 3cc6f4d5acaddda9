"""`card validate`: every check of spec 4.8, and the semantic checks hashes cannot give, over a bundle directory
or .zip. Each defect has its own code (`engine.cards.format.problems`).

File-level checks (layout, zip entry uniqueness, manifest, hashes, counts, every non-stream file hashed, blobs, the
inline cap) are here and in `engine.cards.blobcheck`; the row-level checks are the pure functions of
`engine.cards.format.checks` (schemas, sequences, replay, namespaces, acyclicity, references, failure visibility,
truncation), `engine.cards.format.integrity` (attempt completeness, orphaned running nodes, rollout outcomes),
`engine.cards.format.scope` and `engine.cards.format.omissions` (registry, drops manifests, release scope, redaction counts), and
`engine.cards.bundles` (bundle records), run over blob-resolved rows. Last, `engine.cards.recompute` re-runs every
recorded reporting rule through the code path of `card rescore` and compares it, and the manifest's headline
numbers with the failure counts beside them, to what the streams give.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.canonical import content_hash, sha256_hex
from engine.cards.format.checks import TRUNCATION_WORDS, check_rows
from engine.cards.format.derive import derived_problems
from engine.cards.format.integrity import inline_cap_problems, integrity_problems
from engine.cards.format.lines import Located, decode_lines
from engine.cards.format.model import (BUNDLES_FILE, FORMAT, INLINE_CAP_BYTES, REDACTED_KEY, REDACTED_TOKEN, STREAMS,
                              SUPPORTED_MAJOR, Manifest)
from engine.cards.format.problems import Problem
from engine.cards.format.scope import registry_problems, release_scope_problems
from engine.cards.blobcheck import check_blobs
from engine.cards.bundle import Bundle, stream_path
from engine.cards.bundles import bundle_problems
from engine.cards.manifest import MANIFEST
from engine.cards.namespaces import payload_problems
from engine.cards.recompute import headline_problems, phase_problems, recompute_rules


APPEND_ONLY_STREAMS = ("events", "annotations", "mutations")  # nodes/edges are replayed state, not logs


def validate_path(path: str | Path, previous: str | Path | None = None) -> list[Problem]:
    bundle = Bundle.load(path)
    problems = validate_bundle(bundle)
    if previous is not None:
        problems += append_only_problems(Bundle.load(previous), bundle)
    return problems


def append_only_problems(old: Bundle, new: Bundle) -> list[Problem]:
    """Check 7 against an earlier card of the same run: each log stream of the old card is a byte prefix of the
    new one (rows are only ever appended)."""
    out = []
    for stream in APPEND_ONLY_STREAMS:
        before, after = old.files.get(stream_path(stream), b""), new.files.get(stream_path(stream), b"")
        if not after.startswith(before):
            line = next((i + 1 for i, (a, b) in enumerate(zip(before.split(b"\n"), after.split(b"\n"))) if a != b),
                        after.count(b"\n") + 1)
            out.append(Problem("E_APPEND_ONLY", f"{stream_path(stream)}:{line}", "the previous card's stream is not "
                                                                                 "a prefix of this one (a row was "
                                                                                 "changed, removed or reordered)"))
    return out


def validate_bundle(bundle: Bundle) -> list[Problem]:
    problems: list[Problem] = []
    files = bundle.files
    # 1. layout: required files, zip entries unique, every other file hashed in the manifest
    for name in [MANIFEST, *(stream_path(s) for s in STREAMS)]:
        if name not in files:
            problems.append(Problem("E_LAYOUT_MISSING", name, "required file is missing"))
    problems += [Problem("E_ZIP_DUPLICATE", name, "the zip holds this entry more than once (which one is the card?)")
                 for name in bundle.duplicates]
    # 2. manifest
    manifest = _manifest(files.get(MANIFEST), problems)
    # rows
    raw: dict[str, list[Located]] = {}
    for stream in STREAMS:
        rows, bad = bundle.rows(stream)
        raw[stream] = rows
        problems += [Problem("E_JSON", where, msg) for where, msg in bad]
    # 3. hashes, counts, blobs and the inline cap
    if manifest is not None:
        problems += _hash_problems(bundle, manifest, raw)
    if manifest is not None and manifest.blobs.inline_cap_bytes != INLINE_CAP_BYTES:
        problems.append(Problem("E_INLINE_CAP", MANIFEST, f"blobs.inline_cap_bytes is "
                                                          f"{manifest.blobs.inline_cap_bytes}; the format's cap is "
                                                          f"{INLINE_CAP_BYTES}"))
    problems += _cap_problems(bundle, raw, INLINE_CAP_BYTES)
    blob_problems, resolved = check_blobs(bundle, raw, manifest)
    problems += blob_problems
    # 4-11, 14 and the semantic integrity checks
    declared = set(manifest.namespaces) if manifest is not None else set()
    problems += check_rows(resolved, declared, _may_be_truncated(bundle))
    problems += integrity_problems(resolved)
    problems += payload_problems(resolved["annotations"])
    bundle_rows, bad_bundles = decode_lines(BUNDLES_FILE, files.get(BUNDLES_FILE, b""))
    problems += [Problem("E_BUNDLE_INVALID", where, msg) for where, msg in bad_bundles]
    problems += bundle_problems(bundle_rows, resolved["annotations"], manifest is None or since_1_1(manifest))
    if manifest is None:
        return problems
    # 12, 13: registry, drops, release scope (redaction counts re-counted), then every rule recomputed
    registry = _json(files, manifest.reporting_rules, problems)
    drops = _drops(files, problems)
    marked = {s for s in STREAMS if REDACTED_TOKEN.encode() in files.get(stream_path(s), b"")
              or REDACTED_KEY.encode() in files.get(stream_path(s), b"")}
    if any(REDACTED_KEY.encode() in d or REDACTED_TOKEN.encode() in d for n, d in files.items()
           if n.startswith("blobs/")):
        marked |= set(STREAMS)
    if REDACTED_KEY.encode() in files.get(BUNDLES_FILE, b"") or REDACTED_TOKEN.encode() in files.get(BUNDLES_FILE,
                                                                                                     b""):
        marked.add("bundles")
    problems += release_scope_problems(manifest.release_scope, {**resolved, "bundles": bundle_rows}, marked)
    problems += registry_problems(manifest, registry, drops, resolved)
    if not any(p.code in ("E_JSON", "E_ROW_SCHEMA", "E_BLOB_MISSING", "E_BLOB_HASH_MISMATCH") for p in problems):
        rule_problems, fresh = recompute_rules(bundle, registry, drops, resolved)
        problems += rule_problems + headline_problems(manifest, fresh, since_1_1(manifest))
        problems += phase_problems(bundle, resolved)
        problems += _manifest_facts(manifest, resolved, len(bundle_rows))
        problems += derived_problems(manifest.run, resolved, bundle_rows, since_1_1(manifest, 2))
    return problems


def _manifest_facts(manifest: Manifest, rows: dict[str, list[Located]], n_bundles: int) -> list[Problem]:
    """What the manifest states about the rows (run node status and id, vocabularies, bundle count) is true."""
    roots = [loc.row for loc in rows["nodes"] if loc.row.get("parent_id") is None]
    facts: dict[str, tuple[Any, Any]] = {}
    if roots and "run_node_status" in manifest.run:
        facts["run.run_node_status"] = (manifest.run["run_node_status"], roots[0].get("status"))
    if roots and "run_id" in manifest.run:
        facts["run.run_id"] = (manifest.run["run_id"], roots[0].get("run_id"))
    vocabularies = getattr(manifest, "vocabularies", None)
    if isinstance(vocabularies, dict):
        columns = {"event_types": ("events", "event_type"), "mutation_types": ("mutations", "mutation_type"),
                   "node_statuses": ("nodes", "status")}
        for key, (stream, column) in columns.items():
            if key in vocabularies:
                facts[f"vocabularies.{key}"] = (vocabularies[key], sorted({str(loc.row.get(column))
                                                                           for loc in rows[stream]}))
    bundles = getattr(manifest, "bundles", None)
    if isinstance(bundles, dict) and "count" in bundles:
        facts["bundles.count"] = (bundles["count"], n_bundles)
    return [Problem("E_MANIFEST_MISMATCH", MANIFEST, f"{key} is {stated!r} but the card holds {actual!r}")
            for key, (stated, actual) in facts.items() if stated != actual]


def _may_be_truncated(bundle: Bundle) -> set[str]:
    def mentions(data: bytes) -> bool:
        low = data.lower()
        return any(word.encode() in low for word in TRUNCATION_WORDS)

    if any(mentions(d) for n, d in bundle.files.items() if n.startswith("blobs/")):
        return set(STREAMS)  # resolved rows carry blob text: walk them all
    return {s for s in STREAMS if mentions(bundle.files.get(stream_path(s), b""))}


def _cap_problems(bundle: Bundle, raw: dict[str, list[Located]], cap: int) -> list[Problem]:
    out = []
    for stream in STREAMS:
        lines = bundle.files.get(stream_path(stream), b"").split(b"\n")
        long_lines = {f"{stream_path(stream)}:{i + 1}" for i, line in enumerate(lines) if len(line) > cap}
        if long_lines:
            out += inline_cap_problems(stream, [loc for loc in raw[stream] if loc.where in long_lines], cap)
    return out


def since_1_1(manifest: Manifest, minor_needed: int = 1) -> bool:
    """Format 1.1 added bundle records and failure counts beside headlines, 1.2 the run's derivation; an older
    card is not required to have them (consumers tolerate minor versions)."""
    try:
        major, minor = (int(p) for p in manifest.format_version.split(".")[:2])
    except ValueError:
        return True
    return (major, minor) >= (1, minor_needed)


def _manifest(data: bytes | None, problems: list[Problem]) -> Manifest | None:
    if data is None:
        return None
    try:
        value = json.loads(data)
        manifest = Manifest.model_validate(value)
    except ValueError as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        detail = f"{'.'.join(map(str, first['loc']))}: {first['msg']}" if first else str(exc)
        problems.append(Problem("E_MANIFEST_INVALID", MANIFEST, detail))
        return None
    if manifest.format != FORMAT:
        problems.append(Problem("E_VERSION_UNSUPPORTED", MANIFEST, f"format {manifest.format!r} is not {FORMAT!r}"))
    major = manifest.format_version.split(".", 1)[0]
    if major != str(SUPPORTED_MAJOR):
        problems.append(Problem("E_VERSION_UNSUPPORTED", MANIFEST, f"format_version {manifest.format_version} "
                                                                   f"(this validator reads major {SUPPORTED_MAJOR})"))
    missing = [s for s in STREAMS if s not in manifest.streams]
    if missing:
        problems.append(Problem("E_MANIFEST_INVALID", MANIFEST, f"streams missing from manifest: {missing}"))
    return manifest


def _hash_problems(bundle: Bundle, manifest: Manifest, raw: dict[str, list[Located]]) -> list[Problem]:
    out = []
    for stream, entry in manifest.streams.items():
        data = bundle.files.get(entry.path)
        if data is None:
            if entry.path != stream_path(stream):
                out.append(Problem("E_LAYOUT_MISSING", entry.path, f"stream {stream} listed but absent"))
            continue
        if sha256_hex(data) != entry.sha256:
            out.append(Problem("E_HASH_MISMATCH", entry.path, f"sha256 {sha256_hex(data)[:16]}... != manifest "
                                                              f"{entry.sha256[:16]}..."))
        lines = data.count(b"\n")
        if stream in raw and lines != entry.rows:
            out.append(Problem("E_COUNT_MISMATCH", entry.path, f"{lines} rows, manifest says {entry.rows}"))
        if len(data) != entry.bytes:
            out.append(Problem("E_COUNT_MISMATCH", entry.path, f"{len(data)} bytes, manifest says {entry.bytes}"))
    card_id = "sha256:" + content_hash({s: e.sha256 for s, e in manifest.streams.items()})
    if manifest.card_id != card_id:
        out.append(Problem("E_CARD_ID_MISMATCH", MANIFEST, "card_id is not the digest of the stream hashes"))
    for name, file_entry in manifest.files.items():
        data = bundle.files.get(name)
        if data is None:
            out.append(Problem("E_LAYOUT_MISSING", name, "listed in manifest.files but absent"))
        elif sha256_hex(data) != file_entry.sha256 or len(data) != file_entry.bytes:
            out.append(Problem("E_HASH_MISMATCH", name, "sha256 or size differs from manifest.files"))
    streams = {stream_path(s) for s in STREAMS}
    for name in sorted(bundle.files):
        if name != MANIFEST and name not in streams and not name.startswith("blobs/") and name not in manifest.files:
            out.append(Problem("E_UNHASHED_FILE", name, "the manifest hashes neither the streams' nor manifest.files'"
                                                        " entry for this file: it could be anything"))
    return out


def _json(files: dict[str, bytes], name: str, problems: list[Problem]) -> Any:
    if name not in files:
        return None
    try:
        return json.loads(files[name])
    except ValueError as exc:
        problems.append(Problem("E_REGISTRY", name, f"not JSON: {exc}"))
        return []


def _drops(files: dict[str, bytes], problems: list[Problem]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sorted(files):
        if name.startswith("drops/"):
            try:
                out[name] = json.loads(files[name])
            except ValueError as exc:
                problems.append(Problem("E_DROPS_INVALID", name, f"not JSON: {exc}"))
    return out
