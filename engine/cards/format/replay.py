"""Append-only replay: rebuild nodes, edges and annotations from the mutation log alone (spec 4.8 checks 7 and 9).

Each node/edge/annotation row of a card must equal the state the mutations leave behind, timestamps included:
`node.added`/`edge.added`/`annotation.set` create rows (an annotation.set mutation references its payload by
`payload_sha256`, the content hash of the annotation row's payload, so the value is stored once) (created_at = updated_at = the mutation's created_at),
`*.status_changed` and `node.field_changed` update them (updated_at = the mutation's created_at), tombstones
(`node.removed`, `edge.removed`) remove them. The edge graph is checked for a cycle after every edge.added.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.cards.format.lines import Located
from engine.cards.format.model import PAYLOAD_REF_KEY
from engine.cards.format.problems import Problem

EdgeKey = tuple[str, str]
AnnotationKey = tuple[str, str, str, int]
HASHED = "$sha256"  # replayed state that only knows a value's content hash (an annotation payload stored once)
NODE_FIELDS = ("parent_id", "instance_key", "task_key", "status", "assigned_worker_key", "level")


@dataclass
class ReplayState:
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: dict[EdgeKey, dict[str, Any]] = field(default_factory=dict)
    annotations: dict[AnnotationKey, dict[str, Any]] = field(default_factory=dict)
    successors: dict[str, set[str]] = field(default_factory=dict)


def _reaches(successors: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """A path start -> ... -> goal, if any (iterative DFS)."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen = {start}
    while stack:
        node, path = stack.pop()
        if node == goal:
            return path
        for nxt in sorted(successors.get(node, ())):
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def add_edge_checked(successors: dict[str, set[str]], source: str, target: str) -> list[str] | None:
    """Add source->target; return the cycle it closes (target ... source target), or None."""
    back = _reaches(successors, target, source)
    successors.setdefault(source, set()).add(target)
    return None if back is None else [*back, target]


def _set_annotation(state: ReplayState, m: dict[str, Any]) -> str | None:
    new = m.get("new_value") or {}
    akey = (str(m.get("target_type")), str(m.get("target_id") or ""), str(new.get("namespace")),
            int(new.get("sequence") or 0))
    if akey in state.annotations:
        return f"annotation {akey} set twice"
    payload = {HASHED: new[PAYLOAD_REF_KEY]} if PAYLOAD_REF_KEY in new else new.get("payload")
    state.annotations[akey] = {"target_type": akey[0], "target_id": akey[1], "namespace": akey[2],
                               "sequence": akey[3], "payload": payload, "created_at": m.get("created_at"),
                               "run_id": m.get("run_id")}
    return None


def replay(mutations: Iterable[Located]) -> tuple[ReplayState, list[Problem]]:
    state, problems = ReplayState(), []

    def bad(loc: Located, msg: str, code: str = "E_REPLAY_INVALID") -> None:
        problems.append(Problem(code, loc.where, msg))

    for loc in mutations:
        m = loc.row
        kind, at = m.get("mutation_type"), m.get("created_at")
        target: str = m.get("target_id") or ""  # a missing id is reported by the row-schema check
        new = m.get("new_value") or {}
        old = m.get("old_value") or {}
        if kind == "node.added":
            if target in state.nodes:
                bad(loc, f"node {target!r} added twice")
                continue
            state.nodes[target] = {"node_id": target, "run_id": m.get("run_id"),
                                   **{k: new.get(k) for k in NODE_FIELDS}, "created_at": at, "updated_at": at}
        elif kind in ("node.status_changed", "node.field_changed", "node.removed"):
            node = state.nodes.get(target)
            if node is None:
                bad(loc, f"{kind} for unknown node {target!r}")
                continue
            if kind == "node.removed":
                del state.nodes[target]
            elif kind == "node.status_changed":
                if "status" in old and old["status"] != node["status"]:
                    bad(loc, f"old_value.status {old['status']!r} but node {target!r} is {node['status']!r}")
                node["status"], node["updated_at"] = new.get("status"), at
            else:
                node[str(new.get("field"))], node["updated_at"] = new.get("value"), at
        elif kind in ("edge.added", "edge.status_changed", "edge.removed"):
            key = (str(new.get("source_node_id") or old.get("source_node_id")),
                   str(new.get("target_node_id") or old.get("target_node_id")))
            if kind == "edge.added":
                if key in state.edges:
                    bad(loc, f"edge {key[0]}->{key[1]} added twice")
                    continue
                for end in key:
                    if end not in state.nodes:
                        bad(loc, f"edge {key[0]}->{key[1]} names unknown node {end!r}", "E_REFERENCE")
                state.edges[key] = {"source_node_id": key[0], "target_node_id": key[1], "run_id": m.get("run_id"),
                                    "status": new.get("status"), "created_at": at, "updated_at": at}
                cycle = add_edge_checked(state.successors, *key)
                if cycle is not None:
                    bad(loc, f"edge {key[0]}->{key[1]} closes the cycle {' -> '.join(cycle)}", "E_EDGE_CYCLE")
            elif key not in state.edges:
                bad(loc, f"{kind} for unknown edge {key[0]}->{key[1]}")
            elif kind == "edge.removed":
                del state.edges[key]
                state.successors.get(key[0], set()).discard(key[1])
            else:
                state.edges[key]["status"], state.edges[key]["updated_at"] = new.get("status"), at
        elif kind == "annotation.set":
            problem = _set_annotation(state, m)
            if problem:
                bad(loc, problem)
        # every other mutation type (ledger.committed, phase.completed, run.status_changed, ...) is run-level
        # history without node/edge/annotation state.
    return state, problems
