"""What the simulated endpoint sends for each injected fault kind (engine.sim.faults), poison 200s included."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from engine.sim.faults import POISON_KINDS, FaultPlan
from engine.sim.policy import SIMULATED_NOTE, Policy

SIM_HEADERS = {"X-Simulated-Endpoint": "true"}


def error_body(message: str, type_: str, code: int, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code},
            "simulated": True, "simulated_note": SIMULATED_NOTE}


def json_response(body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(text=json.dumps(body, ensure_ascii=False), status=status, content_type="application/json",
                        headers={**SIM_HEADERS, **(headers or {})})


RENDERED_FAULTS = frozenset({"slow", "malformed_json", "empty_choices", "huge_int", "wrong_types", "truncated_json",
                             "empty_content"})
FAULT_STATUS: dict[str | None, int | str] = {"http_500": 500, "http_503": 503, "http_429": 429, "slow": "slow",
                                             "reset": "reset", "context_overflow": 400}


def poison_body(fault: str, full: dict[str, Any]) -> tuple[str, str]:
    """(body text, content type) of a poison 200 (engine.sim.faults), built from the normal answer `full`."""
    if fault == "deep_nesting":
        depth = 50_000
        return '{"choices": ' + "[" * depth + "]" * depth + "}", "application/json"
    if fault == "huge_int":
        text = json.dumps(full)
        return text[:-1] + ', "usage_overflow": ' + "9" * 5000 + "}", "application/json"
    if fault == "wrong_types":
        full["choices"][0]["message"]["content"] = {"text": full["choices"][0]["message"]["content"]}
        return json.dumps(full), "application/json"
    if fault == "truncated_json":
        text = json.dumps(full)
        return text[: len(text) // 2], "application/json"
    if fault == "html_200":
        return "<!DOCTYPE html><html><body><h1>Gateway OK</h1><p>simulated portal page</p></body></html>", "text/html"
    raise AssertionError(f"not a poison fault: {fault!r}")



async def fault_response(plan: FaultPlan, policy: Policy, wait: Callable[[float], Awaitable[None]],
                         request: web.Request, fault: str, body: dict[str, Any], key: str,
                         decision: Any) -> web.StreamResponse:
    """The response of one injected fault (kinds: engine.sim.faults)."""
    if fault == "http_500":
        return json_response(error_body("simulated internal server error", "InternalServerError", 500),
                              status=500)
    if fault == "http_503":
        return json_response(error_body("simulated service unavailable", "ServiceUnavailableError", 503),
                              status=503)
    if fault == "http_429":
        retry_after = plan.retry_after_s
        text = str(int(retry_after)) if float(retry_after).is_integer() else str(retry_after)
        return json_response(error_body("simulated rate limit: too many requests", "RateLimitError", 429),
                              status=429, headers={"Retry-After": text})
    if fault == "slow":
        await wait(plan.slow_s)
        return json_response(policy.render(body, decision, key))
    if fault == "reset":
        transport = request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                try:  # linger 0: close() sends RST instead of FIN
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            transport.abort()
        # The connection is gone; aiohttp drops this response silently.
        return web.Response(status=200, headers=SIM_HEADERS)
    if fault == "malformed_json":
        partial = json.dumps(policy.render(body, decision, key))[: 40]
        return web.Response(text=partial + "<<simulated: malformed>>", status=200,
                            content_type="application/json", headers=SIM_HEADERS)
    if fault == "empty_choices":
        full = policy.render(body, decision, key)
        full["choices"] = []
        return json_response(full)
    if fault == "empty_content":
        full = policy.render(body, decision, key)
        full["choices"][0]["message"].update({"content": "", "tool_calls": []})
        full["choices"][0]["finish_reason"] = "length"
        return json_response(full)
    if fault in POISON_KINDS:
        text, content_type = poison_body(fault, policy.render(body, decision, key) if decision else {})
        return web.Response(text=text, status=200, content_type=content_type, headers=SIM_HEADERS)
    if fault == "context_overflow":
        prompt_tokens = sum(len(str(m.get("content") or "")) for m in body["messages"]) // 4
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens") or 1024
        if not isinstance(max_tokens, int):
            max_tokens = 1024
        requested = max(plan.context_length + 1, prompt_tokens + max_tokens)
        message = (f"This model's maximum context length is {plan.context_length} tokens. However, you requested "
                   f"{requested} tokens ({requested - max_tokens} in the messages, {max_tokens} in the "
                   "completion). Please reduce the length of the messages or completion.")
        return json_response(error_body(message, "BadRequestError", 400, param="messages"), status=400)
    raise AssertionError(f"unhandled fault kind {fault!r}")
