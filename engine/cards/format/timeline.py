"""Time order, usage and conformance claims.

E_TIME_ORDER: a mutation's created_at earlier than the one before it (in sequence order), an event completed
before it started, a node updated before it was created.
E_USAGE_MISMATCH: a rollout's recorded usage (model calls, prompt and completion tokens) differs from the answered
model calls of its claimed final attempt.
E_CONFORMANCE_CLAIM: the card claims protocol conformance while an endpoint reported itself simulated (the job's
endpoint self-reports, or a response's simulated-endpoint fingerprint).
"""

from __future__ import annotations

from typing import Any

from engine.cards.format.lines import Located
from engine.cards.format.problems import Problem
from engine.cards.format.rollouts import Index

SIMULATED_FINGERPRINT = "mpb-simulated-endpoint"  # engine.sim.policy.SYSTEM_FINGERPRINT


def time_problems(rows: dict[str, list[Located]]) -> list[Problem]:
    out: list[Problem] = []
    last: Any = None
    for loc in sorted(rows.get("mutations", []), key=lambda m: int(m.row.get("sequence") or 0)):
        at = loc.row.get("created_at")
        if isinstance(at, str) and isinstance(last, str) and at < last:
            out.append(Problem("E_TIME_ORDER", loc.where, f"created_at {at} is before the previous mutation's {last}"))
        last = at if isinstance(at, str) else last
    pairs = (("events", "started_at", "completed_at"), ("nodes", "created_at", "updated_at"))
    for stream, first, then in pairs:
        for loc in rows.get(stream, []):
            a, b = loc.row.get(first), loc.row.get(then)
            if isinstance(a, str) and isinstance(b, str) and b < a:
                out.append(Problem("E_TIME_ORDER", loc.where, f"{then} {b} is before {first} {a}"))
    return out


def usage_problems(idx: Index) -> list[Problem]:
    out: list[Problem] = []
    for r in idx.rollouts.values():
        usage, claimed = r.payload.get("usage"), r.payload.get("attempts")
        if not isinstance(usage, dict) or not isinstance(claimed, int) or not r.calls:
            continue
        calls = [c for c in r.latest_generation().get(claimed, []) if (c.row.get("payload") or {}).get("error") is None]
        sums = {"n_llm_calls": len(calls), "prompt_tokens": 0, "completion_tokens": 0}
        for loc in calls:
            response = (loc.row.get("payload") or {}).get("response")
            used = response.get("usage") if isinstance(response, dict) else None
            if not isinstance(used, dict):  # a redacted response: only the call count is comparable
                sums = {"n_llm_calls": len(calls)}
                break
            for key in ("prompt_tokens", "completion_tokens"):
                tokens = used.get(key)
                sums[key] += tokens if isinstance(tokens, int) else 0
        wrong = [k for k in sums if k in usage and (usage[k] or 0) != sums[k]]
        if wrong:
            out.append(Problem("E_USAGE_MISMATCH", r.claim.where, f"rollout {r.node!r} records {wrong} as "
                                                                  f"{[usage[k] for k in wrong]}, its answered calls sum to "
                                                                  f"{[sums[k] for k in wrong]}"))
    return out


def conformance_problems(run: dict[str, Any], derivation: dict[str, Any] | None, idx: Index) -> list[Problem]:
    if run.get("protocol_conformant") is not True:
        return []
    reports = ((derivation or {}).get("job") or {}).get("endpoint_reports") or []
    simulated = [r.get("model_id") for r in reports if isinstance(r, dict) and r.get("simulated")]
    for r in idx.rollouts.values():
        for attempts in r.calls.values():
            for events in attempts.values():
                for loc in events:
                    response = (loc.row.get("payload") or {}).get("response") or {}
                    if response.get("system_fingerprint") == SIMULATED_FINGERPRINT:
                        simulated.append(response.get("model"))
                        break
    if not simulated:
        return []
    return [Problem("E_CONFORMANCE_CLAIM", "manifest.json:run.protocol_conformant",
                    f"the card claims protocol conformance but endpoint(s) reported simulated: {sorted(set(map(str, simulated)))[:3]}")]
