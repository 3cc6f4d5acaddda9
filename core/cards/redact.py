"""Removing values from rows: credential scrubbing (always on) and field-path redaction (on request).

A removed value becomes the marker object `{"$redacted": <reason_code>}`; nothing is truncated.

Credential rule: a key whose normalised name contains api_key/apikey/authorization/secret/password/passwd/
private_key/credential, or contains "token" and holds a string (usage counters such as `prompt_tokens` are
integers and stay; a logprob entry's `token` text, recognised by its sibling `logprob`, stays); plus any string
containing `Bearer <credential>`, an `sk-...` style key or a URL with `user:password@`, whose credential part
is replaced in place.
"""

from __future__ import annotations

import re
from typing import Any

from core.cards.model import REDACTED_KEY

_SECRET_PARTS = ("api_key", "apikey", "authorization", "secret", "password", "passwd", "private_key", "credential",
                 "x_api_key", "cookie")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{4,}")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]+:[^/\s@]+@")
SECRET_MARKER = {REDACTED_KEY: "safety"}


def marker(reason_code: str) -> dict[str, str]:
    return {REDACTED_KEY: reason_code}


def _norm(key: str) -> str:
    return key.lower().replace("-", "_")


def is_secret_key(key: str, value: Any, siblings: dict[str, Any]) -> bool:
    name = _norm(key)
    if any(part in name for part in _SECRET_PARTS):
        return value is not None
    if "token" in name and isinstance(value, str):
        return not (name == "token" and "logprob" in siblings)
    return False


def scrub_string(text: str) -> str:
    text = _BEARER.sub(lambda m: f"{m.group(1)} [redacted]", text)
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}[redacted]@", text)
    return _SK_KEY.sub("sk-[redacted]", text)


def scrub_secrets(value: Any, path: str = "", hits: set[str] | None = None) -> tuple[Any, set[str]]:
    """Return (scrubbed copy, dotted paths where something was removed). List indices are not part of paths."""
    hits = set() if hits is None else hits
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            if is_secret_key(key, item, value) and item != SECRET_MARKER:
                out[key] = dict(SECRET_MARKER)
                hits.add(sub)
            else:
                out[key] = scrub_secrets(item, sub, hits)[0]
        return out, hits
    if isinstance(value, list):
        return [scrub_secrets(item, path, hits)[0] for item in value], hits
    if isinstance(value, str):
        cleaned = scrub_string(value)
        if cleaned != value:
            hits.add(path or "<value>")
        return cleaned, hits
    return value, hits


def redact_path(value: Any, segments: list[str], reason_code: str) -> tuple[Any, int]:
    """Replace the value at `segments` (lists are traversed element-wise, `*` matches every key) by a marker.
    Returns (new value, number of non-null values removed)."""
    if not segments:
        if value is None or (isinstance(value, dict) and set(value) == {REDACTED_KEY}):
            return value, 0
        return marker(reason_code), 1
    if isinstance(value, list):
        total = 0
        out = []
        for item in value:
            new, n = redact_path(item, segments, reason_code)
            out.append(new)
            total += n
        return out, total
    if not isinstance(value, dict):
        return value, 0
    head, rest = segments[0], segments[1:]
    keys = list(value) if head == "*" else [head] if head in value else []
    if not keys:
        return value, 0
    out_d = dict(value)
    total = 0
    for key in keys:
        out_d[key], n = redact_path(value[key], rest, reason_code)
        total += n
    return out_d, total


def mirror_paths(stream: str, segments: list[str]) -> list[tuple[str, list[str], str]]:
    """Where else the same value is recorded: (stream, segments, mutation_type the rows must have).
    An annotation payload is repeated in its annotation.set mutation; a node column in node.added."""
    if stream == "annotations" and segments and segments[0] == "payload":
        return [("mutations", ["new_value", *segments], "annotation.set")]
    if stream == "nodes" and segments and segments[0] not in ("node_id", "created_at", "updated_at", "run_id"):
        return [("mutations", ["new_value", *segments], "node.added")]
    return []
