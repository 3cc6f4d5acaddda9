"""Blob references of a bundle (spec 4.3, check 3): every reference resolves to `blobs/<hex[:2]>/<hex>`, the bytes
hash to their name and match the reference's size, no blob is orphaned, and the manifest's blob summary is true.
Returns the problems and the rows with every resolvable reference replaced by its value."""

from __future__ import annotations

import json
import re
from typing import Any

from core.blobs import BLOB_KEY
from core.canonical import sha256_hex
from engine.cards.format.lines import Located
from engine.cards.format.model import STREAMS, Manifest
from engine.cards.format.problems import Problem
from engine.cards.bundle import Bundle, blob_path, stream_path
from engine.cards.manifest import MANIFEST

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


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


def check_blobs(bundle: Bundle, raw: dict[str, list[Located]], manifest: Manifest | None
           ) -> tuple[list[Problem], dict[str, list[Located]]]:
    out: list[Problem] = []
    good: dict[str, Any] = {}
    referenced: set[str] = set()
    holding = lines_holding(bundle, BLOB_KEY)
    for stream in STREAMS:
        for loc in raw[stream]:
            if loc.where not in holding:
                continue
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

    resolved = {s: [Located(loc.where, resolve(loc.row)) if loc.where in holding else loc for loc in raw[s]]
                for s in STREAMS}
    return out, resolved


def lines_holding(bundle: Bundle, key: str) -> set[str]:
    """`file:line` of every stream line whose bytes contain `"key"` (only those rows can hold a reference: a row
    is one line and a key is never escaped), so the walk skips the rest."""
    needle = json.dumps(key).encode("utf-8")
    out = set()
    for stream in STREAMS:
        name = stream_path(stream)
        data = bundle.files.get(name, b"")
        if needle in data:
            out |= {f"{name}:{i}" for i, line in enumerate(data.split(b"\n"), start=1) if needle in line}
    return out

