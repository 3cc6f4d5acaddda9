"""Every recorded request's key re-derived from the request itself.

E_REQUEST_KEY: a model call's `request_key` is the SHA-256 of the canonical JSON of the body sent (its `params`
plus `messages`, and `tools` when any were sent; engine.recorder), the key a resumed job replays the call by. A
request edited under a stale key (or a key edited to point a replay elsewhere) no longer hashes to it. A request
that redaction or the credential scrub changed (it holds a redaction marker) cannot be re-hashed and is skipped.

A framework runtime's turn (its payload names a `framework`; engine.gateway.turn) is replayed by its logical key,
the SHA-256 of {"gateway_turn": [rollout node, role, member, turn]}, and keeps the body's hash as `request_sha256`:
there the body must hash to `request_sha256` and the key must be the turn's logical key (the rollout node is the
call node's parent).
"""

from __future__ import annotations

from typing import Any

from core.canonical import canonical_json, sha256_hex
from engine.cards.format.lines import Located
from engine.cards.format.model import REDACTED_KEY, REDACTED_TOKEN
from engine.cards.format.problems import Problem


def sent_body(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The body as sent, rebuilt from a model_call payload (None when it cannot be: no request, or redacted)."""
    request, params = payload.get("request"), payload.get("params")
    if not isinstance(request, dict) or not isinstance(params, dict) or "messages" not in request:
        return None
    body = {**params, "messages": request["messages"]}
    if request.get("tools") is not None:
        body["tools"] = request["tools"]
    text = canonical_json(body)
    return None if REDACTED_KEY in text or REDACTED_TOKEN in text else body


def _gateway_key(payload: dict[str, Any], rollout_node: Any) -> str:
    return sha256_hex(canonical_json({"gateway_turn": [rollout_node, payload.get("role"), payload.get("member"),
                                                       payload.get("turn")]}))


def request_key_problems(rows: dict[str, list[Located]]) -> list[Problem]:
    parents = {loc.row.get("node_id"): loc.row.get("parent_id") for loc in rows.get("nodes", [])}
    out: list[Problem] = []
    for loc in rows.get("events", []):
        payload = loc.row.get("payload")
        if loc.row.get("event_type") != "model_call" or not isinstance(payload, dict):
            continue
        key = payload.get("request_key")
        body = sent_body(payload)
        if not isinstance(key, str) or body is None:
            continue
        name = f"model call {loc.row.get('event_id')!r}"
        digest = sha256_hex(canonical_json(body))
        if payload.get("framework"):
            if digest != payload.get("request_sha256"):
                out.append(Problem("E_REQUEST_KEY", loc.where, f"{name}: its request does not hash to its "
                                                               "request_sha256"))
            elif key != _gateway_key(payload, parents.get(loc.row.get("node_id"))):
                out.append(Problem("E_REQUEST_KEY", loc.where, f"{name}: its request_key {key[:16]} is not the "
                                                               "logical key of its framework turn"))
        elif digest != key:
            out.append(Problem("E_REQUEST_KEY", loc.where, f"{name}: its request does not hash to its request_key "
                                                           f"{key[:16]}"))
    return out
