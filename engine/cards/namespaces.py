"""Declared annotation namespaces: every namespace a card uses, with its owner and a one-line description."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from engine.cards.format.lines import Located
from engine.cards.format.omissions import marker_paths
from engine.cards.format.problems import Problem


class _Payload(BaseModel):
    model_config = ConfigDict(extra="allow")


class JobPayload(_Payload):
    """mpb.job: the job's identity on the run node."""

    cell: dict[str, Any]
    method: str | None = None
    optimizer_seed: int | None = None
    budget: int | None = None
    protocol_conformant: bool | None = None
    nonconformance_reasons: list[str] | None = None
    endpoint_kind: str | None = None
    task_model_id: str | None = None
    smoke: dict[str, Any] | None = None  # a smoke run's scope, {"rows_per_split": N} (engine/job/smoke.py)


class ScorePayload(_Payload):
    """mpb.score: the protocol scorer's verdict on a rollout node."""

    value: float
    feedback: str | None = None
    malformed: bool = False
    metadata: dict[str, Any] = {}
    scorer: str | None = None


class RolloutPayload(_Payload):
    """mpb.rollout: a rollout's ledger outcome."""

    status: str
    example_id: str
    phase: str
    request_seed: int | None = None
    bundle_sha256: str | None = None
    attempts: int = 0
    charged: bool = False
    usage: dict[str, Any] | None = None
    final_output: dict[str, Any] | None = None
    budget_exhausted: bool = False
    error: str | None = None
    evaluation_id: str | None = None
    position: int = 0


PAYLOAD_MODELS: dict[str, type[BaseModel]] = {"mpb.job": JobPayload, "mpb.score": ScorePayload,
                                              "mpb.rollout": RolloutPayload}

KNOWN: dict[str, tuple[str, str]] = {
    "mpb.job": ("engine:job", "the job's identity on the run node: cell, method, optimizer seed, budget, "
                              "protocol conformance, endpoint kind and task model id"),
    "mpb.score": ("engine:scorer", "the protocol scorer's verdict on a rollout node: value (0/1), feedback, "
                                   "malformed flag, scorer metadata (e.g. f1) and the scorer id"),
    "mpb.rollout": ("engine:runner", "a rollout's ledger outcome: status, example id, phase, request seed, bundle "
                                     "sha256, attempts, charged, usage, final output, budget_exhausted, error, "
                                     "evaluation id and position"),
}


def payload_problems(annotations: list[Located]) -> list[Problem]:
    """Annotation payloads of this engine's namespaces satisfy the schema their declaration publishes (strict
    types; a payload holding a redaction marker is exempt: the marker replaces a value of any type)."""
    out = []
    for loc in annotations:
        model = PAYLOAD_MODELS.get(str(loc.row.get("namespace")))
        payload = loc.row.get("payload")
        if model is None or not isinstance(payload, dict) or marker_paths(payload):
            continue
        try:
            model.model_validate(payload, strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            out.append(Problem("E_NAMESPACE_SCHEMA", loc.where, f"{loc.row.get('namespace')} payload."
                                                                f"{'.'.join(map(str, first['loc']))}: {first['msg']}"))
    return out


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
        model = PAYLOAD_MODELS.get(ns)
        out[ns] = {"owner": owner, "description": description,
                   "schema": None if model is None else model.model_json_schema()}
    return out
