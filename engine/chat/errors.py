"""The one place where foreign transport and HTTP failures become engine errors (`raise ... from exc`).

Everything the endpoint or the transport can do wrong before a scored observation exists is an
InfrastructureError (retryable at the rollout level with the same request seed):
connection errors, timeouts, HTTP 408/429/5xx, 400/other 4xx (context overflow included), malformed or empty
responses. 429 carries Retry-After.
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


def parse_completion(payload: Any) -> dict[str, Any]:
    """Validate an OpenAI chat-completion body; malformed or empty responses raise MalformedResponseError."""
    if not isinstance(payload, dict):
        raise MalformedResponseError("response body is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedResponseError("response has no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise MalformedResponseError("response choice has no message")
    content = message.get("content")
    raw_calls = message.get("tool_calls") or []
    if content is not None and not isinstance(content, str):
        raise MalformedResponseError("message content is not a string")
    calls = []
    for call in raw_calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise MalformedResponseError("tool call without a function name")
        calls.append({"id": call.get("id"), "name": fn["name"], "arguments": fn.get("arguments")})
    if not (content and content.strip()) and not calls:
        raise MalformedResponseError("empty response (no content and no tool calls)")
    raw_usage = payload.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    return {
        "content": content,
        "tool_calls": calls,
        "finish_reason": choice.get("finish_reason"),
        "usage": {k: usage.get(k) if isinstance(usage.get(k), int) else None
                  for k in ("prompt_tokens", "completion_tokens", "total_tokens")},
        "model": payload.get("model"),
        "system_fingerprint": payload.get("system_fingerprint"),
    }
