"""Canonical JSON and content hashes (protocol-v1 section 1 and 5.6).

Canonical = sorted keys, compact separators, non-ASCII kept, no NaN/Infinity.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


# One encoder for every call: json.dumps with these options builds a new JSONEncoder each time (measured: 3.6 us
# against 2.2 us for a small dict). `encode` keeps no state between calls, so the one instance is thread-safe.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> str:
    return _ENCODER.encode(value)


def sha256_hex(data: str | bytes) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def content_hash(value: Any) -> str:
    """SHA-256 hex digest of the canonical JSON of `value`."""
    return sha256_hex(canonical_json(value))


def seal(payload: dict[str, Any]) -> dict[str, Any]:
    """Return payload plus `sha256` of the payload (without that key)."""
    body = {k: v for k, v in payload.items() if k != "sha256"}
    return {**body, "sha256": content_hash(body)}


def verify_seal(sealed: dict[str, Any]) -> bool:
    if "sha256" not in sealed:
        return False
    body = {k: v for k, v in sealed.items() if k != "sha256"}
    return content_hash(body) == sealed["sha256"]
