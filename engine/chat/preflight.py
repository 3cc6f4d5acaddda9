"""Start-up check: every endpoint a job will use answers one tiny chat completion with its configured model id.

GET /models proves little (a wrong model id, a proxy answering HTML, a server that hangs on POST all pass it), so
the check POSTs one 1-token completion per endpoint, under one deadline (`--startup-timeout`, end to end: the HTTP
session has no timeout of its own), before the job writes anything. Bodies are parsed with the chat client's
limits (engine/chat/body.py). A transient answer (HTTP 429/5xx, a dropped connection) is tried again while the
deadline allows; anything else fails at once. A failure is a `UsageError` (exit 2) whose one line names the
endpoint (credentials never shown) and the cause.

What each endpoint says about itself in that answer (the `X-Simulated-Endpoint` header or a `"simulated"` body
flag, the `model` it reports) is returned as core.artifacts.EndpointReport: the job records it in job.json and the
card, and a job an endpoint contradicts is not conformant (engine/job/evidence.py).

For the reflection endpoint the check also reads GET /models once (best effort, within the same deadline): vLLM
reports each served model's context window there (`max_model_len`), which the job records on the checked endpoint
(`Endpoint.max_model_len`) so the reflection client can fit its prompts (engine/reflection_fit.py). A server that
reports none, or answers anything else, leaves it None (prompts are sent as built).

The request carries `X-MPB-Preflight: 1`, so the simulated endpoint answers it without counting it in its request
log or applying its fault plan; a real server ignores the header.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio

from core.artifacts import EndpointReport
from core.errors import UsageError
from engine.chat.auth import ApiKey, redacted_url, scrub
from engine.chat.body import BodyError, parse_json

PREFLIGHT_HEADER = "X-MPB-Preflight"
SIMULATED_HEADER = "X-Simulated-Endpoint"  # engine/sim sends it on every response
DEFAULT_STARTUP_TIMEOUT_S = 10.0
_PROBE_MESSAGES = [{"role": "user", "content": "Reply with the single word OK."}]


@dataclass(frozen=True)
class Target:
    """One endpoint to check: `role` is what the error line calls it ("task endpoint", "reflection endpoint")."""

    base_url: str
    model_id: str
    api_key: ApiKey | None
    role: str = "task endpoint"
    key_env: str = "OPENAI_API_KEY"


class _Transient(Exception):
    def __init__(self, cause: str, retry_after: float | None = None):
        super().__init__(cause)
        self.retry_after = retry_after


def _snippet(text: str, limit: int = 120) -> str:
    flat = " ".join(scrub(text).split())
    flat = "".join(c if c.isprintable() else "?" for c in flat)
    return flat[:limit] + ("..." if len(flat) > limit else "")


def _error_message(body: str) -> str:
    try:
        payload = parse_json(body)
    except BodyError:
        return _snippet(body)
    if isinstance(payload, dict):
        err = payload.get("error")
        message = err.get("message") if isinstance(err, dict) else payload.get("message", err)
        if isinstance(message, str):
            return _snippet(message)
    return _snippet(body)


def judge_response(status: int, content_type: str, body: str, target: Target) -> dict[str, Any]:
    """Raise _Transient or return a permanent cause via ValueError; the completion when it is usable."""
    if status in (401, 403):
        hint = f"set ${target.key_env}" if target.api_key is None else f"check ${target.key_env}"
        raise ValueError(f"authentication failed (HTTP {status}): {hint}")
    if status == 429 or status == 408 or status >= 500:
        raise _Transient(f"HTTP {status}: {_error_message(body)}")
    if status == 404:
        raise ValueError(f"HTTP 404 for model {target.model_id!r} (model not served, or the URL lacks /v1): "
                         f"{_error_message(body)}")
    if status != 200:
        raise ValueError(f"HTTP {status}: {_error_message(body)}")
    stripped = body.lstrip()
    if "html" in content_type.lower() or stripped[:1] == "<":
        raise ValueError(f"answered HTML, not a JSON chat completion ({_snippet(stripped, 60)})")
    try:
        payload = parse_json(body)  # the chat client's limits (engine/chat/body.py): deep nesting, huge integers
    except BodyError as exc:
        raise ValueError(f"answered non-JSON: {exc} ({_snippet(stripped, 60) or 'empty body'})") from None
    choices = payload.get("choices") if isinstance(payload, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        raise ValueError("answered JSON that is not a chat completion (no choices[0].message)")
    assert isinstance(payload, dict)
    return payload


def heard(target: Target, index: int, headers: Mapping[str, str], payload: dict[str, Any]) -> EndpointReport:
    """What the endpoint said about itself in its answer (core.artifacts.EndpointReport)."""
    model = payload.get("model")
    simulated = headers.get(SIMULATED_HEADER, "").strip().lower() == "true" or payload.get("simulated") is True
    return EndpointReport(role=target.role, index=index, model_id=target.model_id, simulated=simulated,
                          reported_model=model if isinstance(model, str) else None)


async def _attempt(session: aiohttp.ClientSession, target: Target, index: int) -> EndpointReport:
    body = {"model": target.model_id, "messages": _PROBE_MESSAGES, "max_tokens": 1, "temperature": 0.0}
    try:
        async with session.post(f"{target.base_url.rstrip('/')}/chat/completions", json=body) as resp:
            raw = await resp.read()
            text = raw.decode("utf-8", errors="replace")
            payload = judge_response(resp.status, resp.headers.get("Content-Type", ""), text, target)
            return heard(target, index, resp.headers, payload)
    except aiohttp.ClientConnectorError as exc:
        reason = getattr(exc.os_error, "strerror", None) or type(exc.os_error).__name__
        raise ValueError(f"unreachable ({_snippet(str(reason), 80).lower()})") from None
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError) as exc:
        raise _Transient(f"connection dropped ({type(exc).__name__})") from None
    except aiohttp.ClientError as exc:
        raise ValueError(f"{type(exc).__name__}: {_snippet(str(exc), 80)}") from None
    except TimeoutError:  # never the session's own (it has none): kept so a timeout can only mean "no answer"
        raise _Transient("no answer") from None


async def _check(target: Target, index: int, timeout: float) -> str | EndpointReport:
    """What the endpoint reported when it works, else the cause (one line)."""
    headers = {PREFLIGHT_HEADER: "1", "Content-Type": "application/json"}
    if target.api_key is not None:
        headers["Authorization"] = f"Bearer {target.api_key.reveal()}"
    last = "no answer"
    # no aiohttp timeout (its default total of 300 s would cut a longer --startup-timeout): the deadline below is
    # the only one, end to end
    no_limit = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=None, sock_read=None)
    async with aiohttp.ClientSession(headers=headers, timeout=no_limit) as session:
        with anyio.move_on_after(timeout) as scope:
            for attempt in range(3):
                try:
                    return await _attempt(session, target, index)
                except ValueError as exc:
                    return str(exc)
                except _Transient as exc:
                    last = str(exc)
                    await anyio.sleep(min(1.0, 0.2 * (attempt + 1)))
            return last
    assert scope.cancelled_caught
    if last == "no answer":
        return (f"no answer to a 1-token chat completion within {timeout:g} s (busy server? raise "
                "--startup-timeout)")
    return f"still failing after {timeout:g} s: {last}"


def reported_max_model_len(payload: Any, model_id: str) -> int | None:
    """The `max_model_len` a GET /models answer reports for `model_id` (vLLM's field), else None."""
    data = payload.get("data") if isinstance(payload, dict) else None
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model_id:
            value = entry.get("max_model_len")
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


async def max_model_len(target: Target, timeout: float = DEFAULT_STARTUP_TIMEOUT_S) -> int | None:
    """What GET /models says about `target.model_id`'s context window; None on any failure (never raises)."""
    headers = {PREFLIGHT_HEADER: "1"}
    if target.api_key is not None:
        headers["Authorization"] = f"Bearer {target.api_key.reveal()}"
    no_limit = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=None, sock_read=None)
    with anyio.move_on_after(timeout):
        try:
            async with aiohttp.ClientSession(headers=headers, timeout=no_limit) as session:
                async with session.get(f"{target.base_url.rstrip('/')}/models") as resp:
                    if resp.status != 200:
                        return None
                    text = (await resp.read()).decode("utf-8", errors="replace")
            return reported_max_model_len(parse_json(text), target.model_id)
        except (aiohttp.ClientError, OSError, TimeoutError, BodyError, ValueError):
            return None
    return None


async def check_endpoints(targets: Sequence[Target],
                          timeout: float = DEFAULT_STARTUP_TIMEOUT_S) -> list[EndpointReport]:
    """Check every target concurrently; raise UsageError for the first failing one (in the given order). Returns
    what each reported about itself, in the given order (`index` counts the targets of the same role)."""
    if not math.isfinite(timeout) or timeout <= 0:
        raise UsageError(f"the start-up timeout must be a finite number > 0, got {timeout}")
    causes: list[str | EndpointReport] = ["not checked"] * len(targets)
    roles = [t.role for t in targets]

    async def one(i: int, target: Target) -> None:
        causes[i] = await _check(target, roles[:i].count(target.role), timeout)

    async with anyio.create_task_group() as tg:
        for i, target in enumerate(targets):
            tg.start_soon(one, i, target)
    reports = []
    for target, cause in zip(targets, causes):
        if isinstance(cause, str):
            raise UsageError(scrub(f"{target.role} {redacted_url(target.base_url)} (model {target.model_id!r}) "
                                   f"failed the start-up check: {cause}"))
        reports.append(cause)
    return reports

