"""Content-addressed overflow of large JSON values (rollout-card spec 4.3). Never truncates.

A value whose canonical JSON encoding exceeds the inline cap is replaced by a reference object
`{"$blob": "sha256:<hex>", "bytes": N, "media_type": "application/json", "encoding": "json"}`; the exact encoded
bytes are handed to `put(hex, data)`.
"""

from __future__ import annotations

from typing import Any, Callable

from core.canonical import canonical_json, sha256_hex

INLINE_CAP_BYTES = 65536
BLOB_KEY = "$blob"


def externalize(value: Any, put: Callable[[str, bytes], None], cap: int = INLINE_CAP_BYTES) -> Any:
    """Replace every value larger than `cap` (largest containers first, recursing into small-enough parents)."""
    encoded = canonical_json(value).encode("utf-8")
    if len(encoded) <= cap:
        return value
    # Containers are kept and their children examined, so small siblings stay inline; leaves over the cap
    # (long strings, or containers whose children are each small but many) become references.
    out: dict[str, Any] | list[Any]
    if isinstance(value, dict):
        out = {k: externalize(v, put, cap) for k, v in value.items()}
    elif isinstance(value, list):
        out = [externalize(v, put, cap) for v in value]
    else:
        return _ref(encoded, put)
    if len(canonical_json(out).encode("utf-8")) > cap:
        return _ref(encoded, put)
    return out


def _ref(encoded: bytes, put: Callable[[str, bytes], None]) -> dict[str, Any]:
    digest = sha256_hex(encoded)
    put(digest, encoded)
    return {BLOB_KEY: f"sha256:{digest}", "bytes": len(encoded), "media_type": "application/json", "encoding": "json"}


def is_blob_ref(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get(BLOB_KEY), str) and value[BLOB_KEY].startswith("sha256:")


def resolve(value: Any, get: Callable[[str], bytes]) -> Any:
    """Inverse of externalize: replace blob references by their decoded JSON values."""
    import json

    if is_blob_ref(value):
        return json.loads(get(value[BLOB_KEY].split(":", 1)[1]).decode("utf-8"))
    if isinstance(value, dict):
        return {k: resolve(v, get) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, get) for v in value]
    return value


def blob_refs(value: Any) -> list[str]:
    """Every blob digest referenced inside `value`."""
    if is_blob_ref(value):
        return [value[BLOB_KEY].split(":", 1)[1]]
    if isinstance(value, dict):
        return [d for v in value.values() for d in blob_refs(v)]
    if isinstance(value, list):
        return [d for v in value for d in blob_refs(v)]
    return []
