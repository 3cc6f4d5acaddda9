"""Checks 12 (reporting-rule registry and drops manifests) and 13 (release scope). Pure."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from engine.cards.format.checks import same
from engine.cards.format.lines import Located
from engine.cards.format.model import STREAMS, DropsManifest, Manifest, ReleaseScope, RuleEntry
from engine.cards.format.omissions import OMISSION_STREAMS, omission_problems
from engine.cards.format.problems import Problem

REGISTRY_WHERE = "reporting_rules.json"


def release_scope_problems(scope: ReleaseScope, rows: dict[str, list[Located]],
                           may_hold_markers: set[str] | None = None) -> list[Problem]:
    """`rows`: the five streams plus `bundles`, blob references resolved; `may_hold_markers`: streams whose bytes
    contain marker text (default: all)."""
    out = []
    where = "manifest.json:release_scope"
    columns = {stream: {k for loc in rows.get(stream, []) for k in loc.row} for stream in OMISSION_STREAMS}
    for i, om in enumerate(scope.omissions):
        if om.stream not in OMISSION_STREAMS:
            out.append(Problem("E_RELEASE_SCOPE", where, f"omission {i} names unknown stream {om.stream!r}"))
        elif om.field_path.split(".")[0] not in columns[om.stream]:
            out.append(Problem("E_RELEASE_SCOPE", where, f"omission {i}: {om.stream} has no field "
                                                         f"{om.field_path!r}"))
    if scope.class_ == "full_trace" and scope.omissions:
        out.append(Problem("E_RELEASE_SCOPE", where, "class full_trace but omissions are listed"))
    if scope.class_ == "redacted_trace" and not scope.omissions:
        out.append(Problem("E_RELEASE_SCOPE", where, "class redacted_trace but no omission is listed"))
    out += omission_problems(scope, rows, set(OMISSION_STREAMS) if may_hold_markers is None else may_hold_markers)
    return out


def registry_problems(manifest: Manifest, registry: Any, drops: dict[str, Any | None],
                      rows: dict[str, list[Located]]) -> list[Problem]:
    """`registry`: the parsed reporting_rules.json (or None when absent); `drops`: path -> parsed JSON or None."""
    out: list[Problem] = []
    if registry is None:
        if manifest.reported:
            out.append(Problem("E_REGISTRY_INCOMPLETE", REGISTRY_WHERE, "numbers are reported but the registry is "
                                                                        "missing"))
        return out
    if not isinstance(registry, list):
        return [Problem("E_REGISTRY", REGISTRY_WHERE, "expected a JSON list of rule entries (spec 4.5)")]
    entries: dict[str, RuleEntry] = {}
    for i, raw in enumerate(registry):
        try:
            entry = RuleEntry.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            out.append(Problem("E_REGISTRY", f"{REGISTRY_WHERE}:rules[{i}]", f"{'.'.join(map(str, first['loc']))}: "
                                                                             f"{first['msg']}"))
            continue
        if entry.rule_id in entries:
            out.append(Problem("E_REGISTRY", f"{REGISTRY_WHERE}:rules[{i}]", f"rule_id {entry.rule_id!r} repeats"))
        entries[entry.rule_id] = entry
        bad_streams = [s for s in entry.input_streams if s not in STREAMS]
        if bad_streams:
            out.append(Problem("E_REGISTRY", f"{REGISTRY_WHERE}:rules[{i}]", f"unknown input streams {bad_streams}"))
        out += _drops_problems(entry, drops.get(entry.drops_manifest), rows)
    for number in manifest.reported:
        found = entries.get(number.rule_id)
        values = (found.output_target.get("values") or {}) if found else {}
        if found is None or number.name not in values or not same(values[number.name], number.value):
            out.append(Problem("E_REGISTRY_INCOMPLETE", "manifest.json:reported", f"reported {number.name}="
                                                                                  f"{number.value!r} ({number.source})"
                                                                                  f" is not reproduced by rule "
                                                                                  f"{number.rule_id!r}"))
    return out


def _drops_problems(entry: RuleEntry, raw: Any, rows: dict[str, list[Located]]) -> list[Problem]:
    where = entry.drops_manifest
    if raw is None:
        return [Problem("E_DROPS_MISSING", where, f"rule {entry.rule_id!r} names a drops manifest that is absent")]
    try:
        drops = DropsManifest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        return [Problem("E_DROPS_INVALID", where, f"{'.'.join(map(str, first['loc']))}: {first['msg']}")]
    out = []
    if drops.rule_id != entry.rule_id:
        out.append(Problem("E_DROPS_INVALID", where, f"rule_id {drops.rule_id!r} != entry {entry.rule_id!r}"))
    namespaces = {loc.row.get("namespace") for loc in rows.get("annotations", [])}
    for read in drops.reads:
        if read.stream not in STREAMS:
            out.append(Problem("E_DROPS_INVALID", where, f"reads unknown stream {read.stream!r}"))
            continue
        columns = {k for loc in rows.get(read.stream, []) for k in loc.row}
        missing = sorted({f for f in read.fields if f.split(".")[0] not in columns})
        if missing:
            out.append(Problem("E_DROPS_INVALID", where, f"reads {read.stream} fields the card lacks: {missing}"))
        if read.namespace is not None and read.namespace not in namespaces:
            out.append(Problem("E_DROPS_INVALID", where, f"reads namespace {read.namespace!r} the card lacks"))
        if read.rows.count > len(rows.get(read.stream, [])):
            out.append(Problem("E_DROPS_INVALID", where, f"reads {read.rows.count} {read.stream} rows of "
                                                         f"{len(rows.get(read.stream, []))}"))
    return out
