"""The viewer's model calls: one shape for a rollout's calls and for the optimizer's own calls (reflection, judge,
probe: `model_call` events whose task execution is not a rollout's, named by the payload's `component` and
`purpose`), each with its failure."""

from __future__ import annotations

from collections import Counter
from typing import Any


def as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def call_view(e: dict[str, Any], attempt: str) -> dict[str, Any]:
    """One model-call event as the page shows it: request messages, response text, failure, timing."""
    p = as_dict(e.get("payload"))
    error = p.get("error")
    response = as_dict(p.get("response"))
    request = as_dict(p.get("request"))
    return {
        "id": e["event_id"], "attempt": attempt, "node": e["node_id"], "worker": e["worker_binding_key"],
        "type": e["event_type"], "messages": request.get("messages"),
        "response": response.get("content") if response else p.get("response"),
        "tool_calls": response.get("tool_calls") if response else None,
        "finish_reason": response.get("finish_reason") if response else p.get("finish_reason"),
        "error": (error.get("message") if isinstance(error, dict) else error) if error is not None else None,
        "latency": p.get("latency_seconds"), "replayed_from": p.get("replayed_from")}


def optimizer_calls(events: list[dict[str, Any]], rollout_ids: set[str]) -> list[dict[str, Any]]:
    """Every model call outside a rollout, in event order, with its component, purpose, model and logical key."""
    out = []
    for e in events:
        base = str(e["task_execution_id"]).split("#", 1)[0]
        if base in rollout_ids or e["event_type"] != "model_call":
            continue
        p = as_dict(e.get("payload"))
        params = as_dict(p.get("params"))
        component = p.get("component") or str(e["node_id"]).split("/", 1)[0]
        out.append({**call_view(e, str(e["task_execution_id"])), "component": component,
                    "purpose": p.get("purpose"), "model": params.get("model"), "key": p.get("logical_key"),
                    "at": e.get("completed_at") or e.get("started_at")})
    return out


def call_summary(calls: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per component: how many calls and how many of them failed."""
    total: Counter[str] = Counter(str(c["component"]) for c in calls)
    failed: Counter[str] = Counter(str(c["component"]) for c in calls if c["error"] is not None)
    return {k: {"calls": total[k], "failed": failed[k]} for k in sorted(total)}
