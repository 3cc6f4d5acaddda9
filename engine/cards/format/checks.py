"""The validator's checks over in-memory, blob-resolved rows (spec 4.8 checks 4-11 and 14). Pure functions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from core.canonical import content_hash
from engine.cards.format.lines import Located
from engine.cards.format.model import ROW_MODELS, STREAMS, is_redacted
from engine.cards.format.problems import Problem
from engine.cards.format.replay import HASHED, add_edge_checked, replay

Rows = dict[str, list[Located]]
TRUNCATION_MARKERS = ("[truncated]", "<truncated>", "... truncated", "…truncated", "… truncated", "(truncated)",
                      "[...truncated", "[output truncated", "<<truncated")
TRUNCATION_KEYS = ("$truncated", "_truncated", "_ergon_compacted")
FAILURE_STATUSES = ("failed", "cancelled", "skipped")
RUN_TERMINAL = ("completed", "failed", "cancelled")


def same(a: Any, b: Any) -> bool:
    """Equality where a redaction marker on either side stands for the value it replaced."""
    if is_redacted(a) or is_redacted(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _replayed(want: Any, got: Any) -> bool:
    if isinstance(want, dict) and set(want) == {HASHED}:
        return content_hash(got) == want[HASHED]
    return same(want, got)


# ------------------------------------------------------------------------------------------------ 4: row schemas
def schema_problems(stream: str, rows: list[Located]) -> list[Problem]:
    model = ROW_MODELS[stream]
    out = []
    for loc in rows:
        try:
            model.model_validate(loc.row)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "<row>"
            out.append(Problem("E_ROW_SCHEMA", loc.where, f"{stream} row: {where}: {first['msg']}"
                               f" ({exc.error_count()} error(s))"))
    return out


def identity_problems(rows: Rows) -> list[Problem]:
    keys = {"events": lambda r: r.get("event_id"), "nodes": lambda r: r.get("node_id"),
            "edges": lambda r: (r.get("source_node_id"), r.get("target_node_id")),
            "annotations": lambda r: (r.get("target_type"), r.get("target_id"), r.get("namespace"), r.get("sequence"))}
    out = []
    for stream, key in keys.items():
        seen: dict[Any, str] = {}
        for loc in rows.get(stream, []):
            k = key(loc.row)
            if k in seen:
                out.append(Problem("E_DUPLICATE_ID", loc.where, f"{stream} identity {k!r} repeats {seen[k]}"))
            else:
                seen[k] = loc.where
    for loc in rows.get("events", []):
        payload = loc.row.get("payload")
        if isinstance(payload, dict) and "part_kind" in payload and payload["part_kind"] != loc.row.get("event_type"):
            out.append(Problem("E_DISCRIMINATOR", loc.where, f"payload.part_kind {payload['part_kind']!r} != "
                                                             f"event_type {loc.row.get('event_type')!r}"))
    for loc in rows.get("mutations", []):
        for column in ("old_value", "new_value"):
            value = loc.row.get(column)
            if isinstance(value, dict) and "mutation_type" in value and value["mutation_type"] != loc.row.get(
                    "mutation_type"):
                out.append(Problem("E_DISCRIMINATOR", loc.where, f"{column}.mutation_type {value['mutation_type']!r}"
                                                                 f" != mutation_type {loc.row.get('mutation_type')!r}"))
    return out


# ------------------------------------------------------------------------------------------------ 5, 6, 8: sequences
def event_sequence_problems(events: list[Located]) -> list[Problem]:
    out = []
    by_exec: dict[Any, list[Located]] = defaultdict(list)
    for loc in events:
        by_exec[loc.row.get("task_execution_id")].append(loc)
    for execution, locs in by_exec.items():
        previous: int | None = None
        for loc in locs:
            seq = loc.row.get("sequence")
            if not isinstance(seq, int):
                continue
            if previous is not None and seq <= previous:
                out.append(Problem("E_EVENT_SEQUENCE", loc.where, f"execution {execution!r}: sequence {seq} after "
                                                                  f"{previous} (must strictly increase in file order)"))
            previous = seq if previous is None else max(previous, seq)
        seqs = sorted(s for s in (loc.row.get("sequence") for loc in locs) if isinstance(s, int))
        if seqs and seqs != list(range(len(seqs))) and len(set(seqs)) == len(seqs):
            missing = sorted(set(range(seqs[-1] + 1)) - set(seqs))[:5]
            out.append(Problem("E_EVENT_SEQUENCE_GAP", locs[0].where, f"execution {execution!r}: sequences not "
                                                                      f"contiguous from 0 (missing {missing})"))
    return out


def mutation_sequence_problems(mutations: list[Located]) -> list[Problem]:
    out = []
    expected: dict[Any, int] = defaultdict(int)
    for loc in mutations:
        seq, run = loc.row.get("sequence"), loc.row.get("run_id")
        if not isinstance(seq, int):
            continue
        if seq != expected[run]:
            what = "repeats or goes back" if seq < expected[run] else f"skips {expected[run]}..{seq - 1}"
            out.append(Problem("E_MUTATION_SEQUENCE", loc.where, f"run {run!r}: sequence {seq} {what} "
                                                                 f"(expected {expected[run]}; append-only, from 0)"))
        expected[run] = max(expected[run], seq + 1)
    return out


def annotation_sequence_problems(annotations: list[Located]) -> list[Problem]:
    out = []
    groups: dict[tuple[Any, ...], list[Located]] = defaultdict(list)
    for loc in annotations:
        r = loc.row
        groups[(r.get("target_type"), r.get("target_id"), r.get("namespace"))].append(loc)
    for key, locs in groups.items():
        seqs = [s for s in (loc.row.get("sequence") for loc in locs) if isinstance(s, int)]
        if len(seqs) == len(locs) and sorted(seqs) != list(range(len(seqs))):
            out.append(Problem("E_ANNOTATION_SEQUENCE", locs[0].where, f"{key}: sequences {sorted(seqs)} are "
                                                                       "not unique and contiguous from 0"))
    return out


# ------------------------------------------------------------------------------------------------ 7, 9: replay
def replay_problems(rows: Rows) -> list[Problem]:
    state, out = replay(rows.get("mutations", []))
    expected: dict[str, dict[Any, dict[str, Any]]] = {"nodes": state.nodes, "edges": state.edges,
                                                      "annotations": state.annotations}
    keys = {"nodes": lambda r: r.get("node_id"), "edges": lambda r: (r.get("source_node_id"), r.get("target_node_id")),
            "annotations": lambda r: (r.get("target_type"), r.get("target_id"), r.get("namespace"), r.get("sequence"))}
    for stream in ("nodes", "edges", "annotations"):
        remaining = dict(expected[stream])
        for loc in rows.get(stream, []):
            key = keys[stream](loc.row)
            want = remaining.pop(key, None)
            if want is None:
                out.append(Problem("E_REPLAY_MISMATCH", loc.where, f"{stream} row {key!r} is not produced by any "
                                                                   "mutation"))
                continue
            diff = [col for col, value in want.items() if not _replayed(value, loc.row.get(col))]
            if diff:
                out.append(Problem("E_REPLAY_MISMATCH", loc.where, f"{stream} row {key!r} differs from the replayed "
                                                                   f"mutation log in {', '.join(diff)}"))
        for key in remaining:
            out.append(Problem("E_REPLAY_MISMATCH", f"{stream}.jsonl", f"the mutation log leaves {key!r} but "
                                                                       f"{stream}.jsonl lacks it"))
    successors: dict[str, set[str]] = {}
    for loc in rows.get("edges", []):
        cycle = add_edge_checked(successors, str(loc.row.get("source_node_id")), str(loc.row.get("target_node_id")))
        if cycle is not None:
            out.append(Problem("E_EDGE_CYCLE", loc.where, f"edges.jsonl closes the cycle {' -> '.join(cycle)}"))
    return out


# ------------------------------------------------------------------------------------------------ 8, 10: references
def namespace_problems(annotations: list[Located], declared: set[str]) -> list[Problem]:
    out, reported = [], set()
    for loc in annotations:
        ns = loc.row.get("namespace")
        if ns not in declared and ns not in reported:
            reported.add(ns)
            out.append(Problem("E_NAMESPACE_UNDECLARED", loc.where, f"namespace {ns!r} is not declared in "
                                                                    "manifest.namespaces"))
    return out


def reference_problems(rows: Rows) -> list[Problem]:
    out = []
    nodes = {loc.row.get("node_id"): loc.row for loc in rows.get("nodes", [])}
    edges = {f"{loc.row.get('source_node_id')}->{loc.row.get('target_node_id')}" for loc in rows.get("edges", [])}
    for loc in rows.get("nodes", []):
        parent = loc.row.get("parent_id")
        level = loc.row.get("level")
        if parent is None:
            if level != 0:
                out.append(Problem("E_LEVEL", loc.where, f"root node has level {level}, expected 0"))
        elif parent not in nodes:
            out.append(Problem("E_REFERENCE", loc.where, f"parent_id {parent!r} is not a node"))
        elif isinstance(level, int) and nodes[parent].get("level") != level - 1:
            out.append(Problem("E_LEVEL", loc.where, f"level {level} but parent {parent!r} has level "
                                                     f"{nodes[parent].get('level')}"))
    for loc in rows.get("edges", []):
        for column in ("source_node_id", "target_node_id"):
            if loc.row.get(column) not in nodes:
                out.append(Problem("E_REFERENCE", loc.where, f"{column} {loc.row.get(column)!r} is not a node"))
    for loc in rows.get("events", []):
        node = loc.row.get("node_id")
        if node is not None and node not in nodes:
            out.append(Problem("E_REFERENCE", loc.where, f"node_id {node!r} is not a node"))
    for loc in rows.get("annotations", []):
        kind, target = loc.row.get("target_type"), loc.row.get("target_id")
        if (kind == "node" and target not in nodes) or (kind == "edge" and target not in edges):
            out.append(Problem("E_REFERENCE", loc.where, f"annotation target {kind} {target!r} does not exist"))
    return out


# ------------------------------------------------------------------------------------------------ 11: failures
def failure_visibility_problems(rows: Rows) -> list[Problem]:
    out = []
    explained: set[tuple[str, str]] = set()
    run_terminal = False
    roots = {loc.row.get("node_id") for loc in rows.get("nodes", []) if loc.row.get("parent_id") is None}
    for loc in rows.get("mutations", []):
        m = loc.row
        new = m.get("new_value") or {}
        if m.get("mutation_type") == "node.status_changed" and m.get("reason"):
            explained.add((str(m.get("target_id")), str(new.get("status"))))
        if m.get("mutation_type") == "run.status_changed" and new.get("status") in RUN_TERMINAL:
            run_terminal = True
    for loc in rows.get("nodes", []):
        status, node = loc.row.get("status"), str(loc.row.get("node_id"))
        if status in FAILURE_STATUSES and (node, status) not in explained:
            out.append(Problem("E_FAILURE_INVISIBLE", loc.where, f"node {node!r} is {status} but no "
                                                                 "node.status_changed mutation with a reason says so"))
        if node in roots and status in RUN_TERMINAL and (node, status) in explained:
            run_terminal = True
    if rows.get("mutations") and not run_terminal:
        out.append(Problem("W_RUN_NOT_TERMINAL", "mutations.jsonl", "no terminal run status in the mutation log "
                                                                    "(the run was interrupted or is still running)"))
    return out


# ------------------------------------------------------------------------------------------------ 14: truncation
def _strings(value: Any, path: str) -> Iterator[tuple[str, str | None, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key, item
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, path)
    elif isinstance(value, str):
        yield path, None, value


def truncation_problems(stream: str, rows: list[Located]) -> list[Problem]:
    out = []
    for loc in rows:
        for path, key, value in _strings(loc.row, ""):
            if key is not None:
                if key in TRUNCATION_KEYS:
                    out.append(Problem("E_TRUNCATED", loc.where, f"truncation key {key!r} at {path.lstrip('.')}"))
                    break
                continue
            low = value.lower()
            hit = next((m for m in TRUNCATION_MARKERS if m in low), None)
            if hit:
                out.append(Problem("E_TRUNCATED", loc.where, f"truncation marker {hit!r} in {stream}"
                                                             f"{path or '.<value>'}"))
                break
    return out


TRUNCATION_WORDS = ("truncated", "compacted")  # every marker and key above contains one of them


def check_rows(rows: Rows, declared_namespaces: set[str], may_be_truncated: set[str] | None = None
               ) -> list[Problem]:
    """Checks 4-11 and 14 over all streams (each stream's rows in file order, blob references resolved).
    `may_be_truncated`: the streams whose text contains a TRUNCATION_WORDS word at all (default: all); the
    truncation walk skips the others."""
    problems: list[Problem] = []
    for stream in STREAMS:
        problems += schema_problems(stream, rows.get(stream, []))
        if may_be_truncated is None or stream in may_be_truncated:
            problems += truncation_problems(stream, rows.get(stream, []))
    problems += identity_problems(rows)
    problems += event_sequence_problems(rows.get("events", []))
    problems += mutation_sequence_problems(rows.get("mutations", []))
    problems += annotation_sequence_problems(rows.get("annotations", []))
    problems += replay_problems(rows)
    problems += namespace_problems(rows.get("annotations", []), declared_namespaces)
    problems += reference_problems(rows)
    problems += failure_visibility_problems(rows)
    return problems
