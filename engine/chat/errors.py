"""The one place where foreign transport and HTTP failures become engine errors (`raise ... from exc`).

Everything the endpoint or the transport can do wrong before a scored observation exists is an
InfrastructureError (retryable at the rollout level with the same request seed):
connection errors, timeouts, HTTP 408/429/5xx, 400/other 4xx (context overflow included), and any body that cannot
be parsed into the chat schema (not JSON, truncated JSON, HTML with 200, absurd nesting -> RecursionError, integers
past Python's digit limit -> ValueError, wrong types, no choices). 429 carries Retry-After.

An HTTP 200 whose message is well formed but EMPTY (no content, no tool calls) is NOT an infrastructure failure:
protocol-v1 section 5.3 makes it an observed model call with a malformed answer, scored 0 (`semantic_failure`);
thinking models that spend every token produce exactly this.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import aiohttp

from core.errors import (
    BadRequestError,
    EndpointConnectionError,
    EndpointStatusError,
    EndpointTimeout,
    InfrastructureError,
    MalformedResponseError,
)
from engine.chat.body import BodyError, parse_json

# Foreign exception classes and what they become. Order matters: subclasses first.
TRANSPORT_ERROR_MAP: tuple[tuple[type[BaseException], type[InfrastructureError]], ...] = (
    (aiohttp.ServerTimeoutError, EndpointTimeout),
    (aiohttp.ConnectionTimeoutError, EndpointTimeout),
    (aiohttp.SocketTimeoutError, EndpointTimeout),
    (asyncio.TimeoutError, EndpointTimeout),
    (TimeoutError, EndpointTimeout),
    (aiohttp.ServerDisconnectedError, EndpointConnectionError),
    (aiohttp.ClientConnectorError, EndpointConnectionError),
    (aiohttp.ClientOSError, EndpointConnectionError),
    (aiohttp.ClientPayloadError, EndpointConnectionError),
    (aiohttp.ClientConnectionError, EndpointConnectionError),
    (ConnectionError, EndpointConnectionError),
    (aiohttp.ContentTypeError, MalformedResponseError),
    (json.JSONDecodeError, MalformedResponseError),
    (UnicodeDecodeError, MalformedResponseError),
    (aiohttp.ClientResponseError, EndpointStatusError),
    (aiohttp.ClientError, EndpointConnectionError),
)


def translate_exception(exc: BaseException) -> InfrastructureError:
    """Map a transport exception to its engine error (callers `raise translate_exception(e) from e`)."""
    if isinstance(exc, InfrastructureError):
        return exc
    for foreign, ours in TRANSPORT_ERROR_MAP:
        if isinstance(exc, foreign):
            text = str(exc) or type(exc).__name__
            return ours(f"{type(exc).__name__}: {text}"[:500])
    raise TypeError(f"not a transport error: {type(exc).__name__}") from exc


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After") or headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def classify_status(status: int, body: str, headers: Mapping[str, str]) -> InfrastructureError:
    """A non-200 HTTP status as an engine error."""
    detail = body[:300].replace("\n", " ")
    if status == 429:
        return EndpointStatusError(f"HTTP 429 rate limited: {detail}", status_code=status,
                                   retry_after=parse_retry_after(headers))
    if status == 408 or status >= 500:
        return EndpointStatusError(f"HTTP {status}: {detail}", status_code=status,
                                   retry_after=parse_retry_after(headers))
    return BadRequestError(f"HTTP {status}: {detail}", status_code=status)


MAX_USAGE_TOKENS = 2**53  # token counts outside [0, 2^53) are implausible: recorded as absent (null)


def decode_body(text: str) -> Any:
    """JSON text -> value; every way a body can fail to decode (engine/chat/body.py: its limits are shared with the
    start-up check and the gateway) is a MalformedResponseError."""
    try:
        return parse_json(text)
    except BodyError as exc:
        raise MalformedResponseError(f"response body is {exc}") from exc


def _optional_str(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise MalformedResponseError(f"{what} is not a string")
    return value


def _usage(raw: Any) -> dict[str, int | None]:
    usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
    out: dict[str, int | None] = {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = usage.get(key)
        plausible = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_USAGE_TOKENS
        out[key] = value if plausible else None
    return out


def parse_completion(payload: Any) -> dict[str, Any]:
    """Validate an OpenAI chat-completion body; anything that is not the chat schema raises
    MalformedResponseError. Empty content without tool calls is returned as content "" (a semantic failure)."""
    if not isinstance(payload, dict):
        raise MalformedResponseError("response body is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedResponseError("response has no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise MalformedResponseError("response choice has no message")
    content = _optional_str(message.get("content"), "message content")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise MalformedResponseError("message tool_calls is not a list")
    calls = []
    for call in raw_calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise MalformedResponseError("tool call without a function name")
        calls.append({"id": _optional_str(call.get("id"), "tool call id"), "name": fn["name"],
                      "arguments": _optional_str(fn.get("arguments"), "tool call arguments")})
    model = payload.get("model")
    fingerprint = payload.get("system_fingerprint")
    return {
        "content": content if content is not None or calls else "",
        "tool_calls": calls,
        "finish_reason": _optional_str(choice.get("finish_reason"), "finish_reason"),
        "usage": _usage(payload.get("usage")),
        "model": model if isinstance(model, str) else None,
        "system_fingerprint": fingerprint if isinstance(fingerprint, str) else None,
    }
