"""Canonical JSON lines: one object per line, sorted keys, compact, UTF-8, `\\n` endings, no NaN/Infinity."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from core.canonical import canonical_json


def encode_lines(rows: Iterable[dict[str, Any]]) -> bytes:
    return "".join(canonical_json(row) + "\n" for row in rows).encode("utf-8")


def _no_constants(name: str) -> Any:
    raise ValueError(f"non-JSON constant {name}")


def loads(text: str | bytes) -> Any:
    return json.loads(text, parse_constant=_no_constants)


@dataclass(frozen=True)
class Located:
    """A row with where it came from (`events.jsonl:12`, 1-based lines)."""

    where: str
    row: dict[str, Any]


def decode_lines(path: str, data: bytes) -> tuple[list[Located], list[tuple[str, str]]]:
    """Rows of a JSONL file plus (location, message) for each line that is not one JSON object."""
    rows: list[Located] = []
    bad: list[tuple[str, str]] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [], [(path, f"not UTF-8: {exc}")]
    if text and not text.endswith("\n"):
        bad.append((path, "last line lacks its newline (file cut short?)"))
    # split on "\n" only: str.splitlines() would also split inside strings holding U+0085, U+2028, \x0c ...
    body = text[:-1] if text.endswith("\n") else text
    for number, line in enumerate(body.split("\n") if body else [], start=1):
        where = f"{path}:{number}"
        try:
            value = loads(line)
        except ValueError as exc:
            bad.append((where, f"not JSON: {exc}"))
            continue
        if not isinstance(value, dict):
            bad.append((where, f"a row must be a JSON object, got {type(value).__name__}"))
            continue
        rows.append(Located(where, value))
    return rows, bad
