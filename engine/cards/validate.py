"""`card validate`: every check of spec 4.8 over a bundle directory or .zip.

File-level checks (layout, manifest, hashes, counts, blobs) are here; the row-level checks are the pure functions
of `core.cards.checks` (schemas, sequences, replay, namespaces, acyclicity, references, failure visibility,
truncation) and `core.cards.scope` (registry, drops manifests, release scope), run over blob-resolved rows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.blobs import BLOB_KEY
from core.canonical import content_hash, sha256_hex
from core.cards.checks import check_rows
from core.cards.lines import Located
from core.cards.model import FORMAT, REGISTRY_FILE, STREAMS, SUPPORTED_MAJOR, Manifest
from core.cards.problems import Problem
from core.cards.scope import registry_problems, release_scope_problems
from engine.cards.bundle import Bundle, blob_path, stream_path
from engine.cards.manifest import MANIFEST

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
TOP_LEVEL = {MANIFEST, REGISTRY_FILE, *(stream_path(s) for s in STREAMS)}
DIRECTORIES = ("blobs/", "drops/")


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
    # 1. layout
    for name in [MANIFEST, *(stream_path(s) for s in STREAMS)]:
        if name not in files:
            problems.append(Problem("E_LAYOUT_MISSING", name, "required file is missing"))
    for name in sorted(files):
        if name not in TOP_LEVEL and not name.startswith(DIRECTORIES):
            problems.append(Problem("W_UNKNOWN_FILE", name, "not part of the rollout-card layout"))
    # 2. manifest
    manifest = _manifest(files.get(MANIFEST), problems)
    # rows
    raw: dict[str, list[Located]] = {}
    for stream in STREAMS:
        rows, bad = bundle.rows(stream)
        raw[stream] = rows
        problems += [Problem("E_JSON", where, msg) for where, msg in bad]
    # 3. hashes and counts
    if manifest is not None:
        problems += _hash_problems(bundle, manifest, raw)
    blob_problems, resolved = _blobs(bundle, raw, manifest)
    problems += blob_problems
    # 4-11, 14
    declared = set(manifest.namespaces) if manifest is not None else set()
    problems += check_rows(resolved, declared)
    # 12, 13
    if manifest is not None:
        problems += release_scope_problems(manifest.release_scope, resolved)
        problems += registry_problems(manifest, _json(files, manifest.reporting_rules, problems),
                                      _drops(files, problems), resolved)
    return problems


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
    for name in sorted(bundle.files):
        if (name == REGISTRY_FILE or name.startswith("drops/")) and name not in manifest.files:
            out.append(Problem("E_HASH_MISMATCH", name, "not covered by manifest.files"))
    return out


def _refs(value: Any, found: list[tuple[str, Any]]) -> None:
    if isinstance(value, dict):
        if BLOB_KEY in value:
            found.append((str(value.get(BLOB_KEY)), value))
            return
        for item in value.values():
            _refs(item, found)
    elif isinstance(value, list):
        for item in value:
            _refs(item, found)


def _blobs(bundle: Bundle, raw: dict[str, list[Located]], manifest: Manifest | None
           ) -> tuple[list[Problem], dict[str, list[Located]]]:
    out: list[Problem] = []
    good: dict[str, Any] = {}
    referenced: set[str] = set()
    for stream in STREAMS:
        for loc in raw[stream]:
            found: list[tuple[str, Any]] = []
            _refs(loc.row, found)
            for ref, obj in found:
                digest = ref.split(":", 1)[1] if ref.startswith("sha256:") else ""
                if not _HEX64.match(digest):
                    out.append(Problem("E_BLOB_REF_INVALID", loc.where, f"malformed blob reference {ref!r}"))
                    continue
                referenced.add(digest)
                if digest in good:
                    continue
                data = bundle.files.get(blob_path(digest))
                if data is None:
                    out.append(Problem("E_BLOB_MISSING", loc.where, f"{blob_path(digest)} is absent"))
                    continue
                if sha256_hex(data) != digest or obj.get("bytes", len(data)) != len(data):
                    out.append(Problem("E_BLOB_HASH_MISMATCH", blob_path(digest), "bytes do not hash to the name "
                                                                                  "or differ in size from the ref"))
                    continue
                try:
                    good[digest] = json.loads(data)
                except ValueError as exc:
                    out.append(Problem("E_BLOB_HASH_MISMATCH", blob_path(digest), f"not JSON: {exc}"))
    blobs = {n: d for n, d in bundle.files.items() if n.startswith("blobs/")}
    for name in sorted(blobs):
        if name.rsplit("/", 1)[-1] not in referenced:
            out.append(Problem("E_BLOB_ORPHAN", name, "no row references this blob"))
    if manifest is not None and (manifest.blobs.count != len(blobs)
                                 or manifest.blobs.total_bytes != sum(map(len, blobs.values()))):
        out.append(Problem("E_COUNT_MISMATCH", MANIFEST, f"blob summary {manifest.blobs.count} blobs/"
                                                         f"{manifest.blobs.total_bytes} bytes, card has {len(blobs)}/"
                                                         f"{sum(map(len, blobs.values()))}"))

    def resolve(value: Any) -> Any:
        if isinstance(value, dict):
            ref = value.get(BLOB_KEY)
            if isinstance(ref, str) and ref.startswith("sha256:") and ref[7:] in good:
                return good[ref[7:]]
            return {k: resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        return value

    resolved = {s: [Located(loc.where, resolve(loc.row)) for loc in raw[s]] for s in STREAMS}
    return out, resolved


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
