"""Redaction bookkeeping that the exporter records and the validator re-checks, from the rows alone.

A removed value leaves a marker: the object `{"$redacted": <reason_code>}`, or inside a string the token
`[redacted]` (credentials) / `[redacted:<reason_code>]` (a removed value followed into other text). The marker
paths of a row are dotted paths without list indices (`payload.request.messages.content`).

An omission `(stream, field_path, row_filter)` affects a row when the row passes the filter and holds a marker at
`field_path` or below it. `rows_affected` is that number of rows: the exporter computes it with `count_marked` on
the rows it writes and the validator recomputes it the same way, so an understated or inflated count is caught.
Every marker must sit under some omission of its stream (an undeclared removal is an error too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from engine.cards.format.lines import Located
from engine.cards.format.model import BUNDLES_FILE, REDACTED_KEY, REDACTED_TOKEN, STREAMS, ReleaseScope
from engine.cards.format.problems import Problem

OMISSION_STREAMS: tuple[str, ...] = (*STREAMS, "bundles")
_FILTER = re.compile(r"^mutation_type == '([^']+)'$")
WHERE = "manifest.json:release_scope"


def marker_paths(value: Any, path: str = "", out: set[str] | None = None) -> set[str]:
    out = set() if out is None else out
    if isinstance(value, dict):
        if REDACTED_KEY in value and len(value) == 1:
            out.add(path or "<value>")
            return out
        for key, item in value.items():
            marker_paths(item, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list):
        for item in value:
            marker_paths(item, path, out)
    elif isinstance(value, str) and REDACTED_TOKEN in value:
        out.add(path or "<value>")
    return out


def passes(row: dict[str, Any], row_filter: str | None) -> bool:
    """The row filters this engine writes: none, or `mutation_type == '<type>'`."""
    if row_filter is None:
        return True
    match = _FILTER.match(row_filter)
    return match is None or row.get("mutation_type") == match.group(1)


def under(path: str, field_path: str) -> bool:
    return path == field_path or path.startswith(field_path + ".")


def count_marked(rows: Iterable[dict[str, Any]], field_path: str, row_filter: str | None) -> int:
    return sum(1 for row in rows if passes(row, row_filter) and any(under(p, field_path) for p in marker_paths(row)))


def _where(stream: str) -> str:
    return BUNDLES_FILE if stream == "bundles" else f"{stream}.jsonl"


def omission_problems(scope: ReleaseScope, rows: dict[str, list[Located]], may_hold_markers: set[str]
                      ) -> list[Problem]:
    """E_REDACTION_COUNT for a recorded count the rows do not reproduce; E_RELEASE_SCOPE for a marker no omission
    declares. `may_hold_markers`: the streams whose bytes contain the marker text at all (others are skipped)."""
    out: list[Problem] = []
    marks: dict[str, list[tuple[dict[str, Any], set[str], str]]] = {}
    for stream in OMISSION_STREAMS:
        if stream in may_hold_markers:
            marks[stream] = [(loc.row, paths, loc.where) for loc in rows.get(stream, [])
                             if (paths := marker_paths(loc.row))]
    for i, om in enumerate(scope.omissions):
        found = marks.get(om.stream, [])
        n = sum(1 for row, paths, _ in found if passes(row, om.row_filter) and any(under(p, om.field_path)
                                                                                     for p in paths))
        if n != om.rows_affected:
            out.append(Problem("E_REDACTION_COUNT", WHERE, f"omission {i} ({om.stream}.{om.field_path}) records "
                                                           f"rows_affected={om.rows_affected}, the card holds {n} "
                                                           "such row(s)"))
    for stream, found in marks.items():
        declared = [om for om in scope.omissions if om.stream == stream]
        for row, paths, where in found:
            loose = sorted(p for p in paths if not any(under(p, om.field_path) and passes(row, om.row_filter)
                                                       for om in declared))
            if loose:
                out.append(Problem("E_RELEASE_SCOPE", where, f"redaction marker at {loose[0]} is declared by no "
                                                             f"release_scope omission of {_where(stream)}"))
                break
    return out
