"""Declared annotation namespaces: every namespace a card uses, with its owner and a one-line description."""

from __future__ import annotations

from typing import Any

KNOWN: dict[str, tuple[str, str]] = {
    "mpb.job": ("engine:job", "the job's identity on the run node: cell, method, optimizer seed, budget, "
                              "protocol conformance, endpoint kind and task model id"),
    "mpb.score": ("engine:scorer", "the protocol scorer's verdict on a rollout node: value (0/1), feedback, "
                                   "malformed flag, scorer metadata (e.g. f1) and the scorer id"),
    "mpb.rollout": ("engine:runner", "a rollout's ledger outcome: status, example id, phase, request seed, bundle "
                                     "sha256, attempts, charged, usage, final output, budget_exhausted, error, "
                                     "evaluation id and position"),
}


def declare_namespaces(annotations: list[dict[str, Any]], mutations: list[dict[str, Any]]) -> dict[str, Any]:
    actors: dict[str, str] = {}
    for m in mutations:
        if m.get("mutation_type") == "annotation.set":
            ns = (m.get("new_value") or {}).get("namespace")
            if isinstance(ns, str) and ns not in actors:
                actors[ns] = m.get("actor") or "unknown"
    out: dict[str, Any] = {}
    for ns in sorted({a["namespace"] for a in annotations}):
        owner, description = KNOWN.get(ns, (actors.get(ns, "unknown"),
                                            f"namespace written by {actors.get(ns, 'an unknown actor')}; "
                                            "no description registered"))
        out[ns] = {"owner": owner, "description": description, "schema": None}
    return out
