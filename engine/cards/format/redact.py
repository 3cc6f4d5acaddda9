"""Removing values from rows: credential scrubbing (always on) and field-path redaction (on request).

A removed value becomes the marker object `{"$redacted": <reason_code>}`; nothing is truncated.

Credential rule: a key whose normalised name contains api_key/apikey/authorization/secret/password/passwd/
private_key/credential (unless it holds a JSON Schema node: a tool parameter so named declares a credential and
keeps its schema), or contains "token" and holds a string (usage counters such as `prompt_tokens` are
integers and stay; a logprob entry's `token` text, recognised by its sibling `logprob`, stays); plus any string
containing `Bearer <credential>`, an `sk-...` style key or a URL with `user:password@`, whose credential part
is replaced in place.
"""

from __future__ import annotations

import re
from typing import Any

from engine.cards.format.model import REDACTED_KEY

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


_SCHEMA_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null",  # JSON Schema
                           "str", "int", "float", "bool", "dict", "list", "tuple", "any"})  # and BFCL's spellings


def is_schema_node(value: Any) -> bool:
    """A JSON Schema node (a tool parameter named `password` or `api_key` declares a credential, holds none): its
    `type` is a schema type name (or a list of them), or it declares `properties`. It is kept and scrubbed inside
    like any other value, so redaction never rewrites a tool's schema; any other value under such a key goes."""
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    return isinstance(value.get("properties"), dict) or \
        (kind is not None and all(isinstance(k, str) and k.lower() in _SCHEMA_TYPES for k in kinds))


def is_secret_key(key: str, value: Any, siblings: dict[str, Any]) -> bool:
    name = _norm(key)
    if any(part in name for part in _SECRET_PARTS):
        return value is not None and not is_schema_node(value)
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
    """Where else the same column is recorded: (stream, segments, mutation_type the rows must have). A node column
    is repeated in its node.added mutation. (An annotation payload is stored once: its annotation.set mutation
    references it by hash.)"""
    if stream == "nodes" and segments and segments[0] not in ("node_id", "created_at", "updated_at", "run_id"):
        return [("mutations", ["new_value", *segments], "node.added")]
    return []


# ------------------------------------------------------------------------------------------------ following values
MIN_FOLLOW_CHARS = 8  # shorter strings ("A", "42", "yes") cannot be told apart from unrelated text


def values_at(value: Any, segments: list[str]) -> list[Any]:
    """Every value at `segments` (lists traversed element-wise, `*` matches every key)."""
    if not segments:
        return [value]
    if isinstance(value, list):
        return [v for item in value for v in values_at(item, segments)]
    if not isinstance(value, dict):
        return []
    head, rest = segments[0], segments[1:]
    keys = list(value) if head == "*" else [head] if head in value else []
    return [v for key in keys for v in values_at(value[key], rest)]


# Values that name structure, not text: a message's role, a tool call's type, name and id. They are neither followed
# out of a removed value nor rewritten where they occur (removing the messages must not turn every "function" or
# "assistant" elsewhere into a marker).
STRUCTURAL_KEYS = frozenset({"role", "type", "name", "id", "tool_call_id", "finish_reason", "model"})


def is_declaration(value: Any) -> bool:
    """A tool definition or a JSON Schema node: declared by the dataset or the topology, never conversation text, so
    a redaction that follows removed text leaves it whole."""
    return isinstance(value, dict) and (is_schema_node(value) or
                                        (value.get("type") == "function" and isinstance(value.get("function"), dict)))


def leaf_strings(value: Any) -> set[str]:
    """The strings inside `value` long enough to be followed elsewhere (redaction markers and structural values
    excluded)."""
    if isinstance(value, str):
        return {value} if len(value) >= MIN_FOLLOW_CHARS else set()
    if isinstance(value, dict):
        if REDACTED_KEY in value or is_declaration(value):
            return set()
        return {s for k, v in value.items() if k not in STRUCTURAL_KEYS for s in leaf_strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in leaf_strings(v)}
    return set()


MIN_CONTAINED_CHARS = 32  # a string this long found inside a removed value is part of what was removed


class Follower:
    """Removes removed values wherever else they were written: a string equal to one becomes the marker object, a
    string containing one has each occurrence replaced by `[redacted:<reason_code>]`, and a string of at least
    MIN_CONTAINED_CHARS characters that occurs inside a removed value (a role text inside a removed system
    message, an agent's reply quoted in a removed prompt) becomes the marker object."""

    def __init__(self, strings: set[str], reason_code: str):
        self.exact = set(strings)
        self.haystack = "\x00".join(sorted(self.exact))
        ordered = sorted(self.exact, key=lambda s: (-len(s), s))
        self.pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self.reason_code = reason_code
        self.token = f"[redacted:{reason_code}]"

    def apply(self, value: Any, path: str, hits: set[str]) -> Any:
        """Return the cleaned copy of `value`; add the dotted path (no list indices) of every change to `hits`."""
        if self.pattern is None:
            return value
        if isinstance(value, str):
            if value in self.exact:
                hits.add(path or "<value>")
                return marker(self.reason_code)
            if self.pattern.search(value):
                hits.add(path or "<value>")
                return self.pattern.sub(self.token, value)
            if len(value) >= MIN_CONTAINED_CHARS and value in self.haystack:
                hits.add(path or "<value>")
                return marker(self.reason_code)
            return value
        if isinstance(value, dict):
            if REDACTED_KEY in value or is_declaration(value):
                return value
            return {k: v if k in STRUCTURAL_KEYS else self.apply(v, f"{path}.{k}" if path else k, hits)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self.apply(v, path, hits) for v in value]
        return value
