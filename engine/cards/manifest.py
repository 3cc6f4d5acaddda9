"""Writing manifest.json: pretty, sorted, deterministic JSON, with `files` listing the sha256 and size of every
file that is neither a stream nor a blob (reporting_rules.json, drops manifests)."""

from __future__ import annotations

import json
from typing import Any

from core.canonical import sha256_hex
from engine.cards.format.model import STREAMS
from engine.cards.bundle import Bundle, stream_path

MANIFEST = "manifest.json"


def json_bytes(value: Any) -> bytes:
    return (json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def listed_files(bundle: Bundle) -> dict[str, dict[str, Any]]:
    streams = {stream_path(s) for s in STREAMS}
    return {name: {"sha256": sha256_hex(data), "bytes": len(data)} for name, data in sorted(bundle.files.items())
            if name != MANIFEST and not name.startswith("blobs/") and name not in streams}


def set_manifest(bundle: Bundle, manifest: dict[str, Any]) -> None:
    bundle.files[MANIFEST] = json_bytes({**manifest, "files": listed_files(bundle)})
