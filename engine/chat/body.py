"""Chat request bodies built from a typed decoding (`request_body`), and JSON bodies that come from outside the
process, parsed with one set of limits: the chat client's responses
(engine/chat/errors.decode_body), the start-up check's answers (engine/chat/preflight.py) and the requests
framework agents send to the recording gateway (engine/gateway/server.py).

The limits are the parser's own, turned into one clean error instead of a traceback: nesting deeper than the
interpreter's recursion limit (the C decoder raises RecursionError; a 50,000-deep body does), integers past
Python's digit limit (4,300 digits: ValueError), invalid UTF-8, and anything that is not JSON. The message is one
line, at most about 200 characters, and never quotes more than a few characters of the body.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.protocol import Decoding


class BodyError(ValueError):
    """A body that is not acceptable JSON; `str()` is one line saying why."""


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    text = " ".join(str(exc).split())
    if "int" in text and "digits" in text:
        return "an integer has too many digits"
    return f"{type(exc).__name__}: {text[:160]}"


def parse_json(body: str | bytes) -> Any:
    """The JSON value of `body`; BodyError when it is not JSON within the limits above."""
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, the digit limit, nesting
        raise BodyError(f"not valid JSON ({_why(exc)})") from None


def request_body(model: str, messages: list[dict[str, Any]], decoding: Decoding,
                 tools: Sequence[dict[str, Any]] | None = None, *, omit: Sequence[str] = ()) -> dict[str, Any]:
    """An agent turn's request before its seed (the recorder derives it from the turn): every knob of `decoding`
    sent explicitly, in this order (the recorded `params` keep it); a None repetition penalty and the `omit`
    parameters (a framework's runner sends none: core.protocol.FRAMEWORK_OMITTED_PARAMS) are left out."""
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": decoding.temperature,
                            "top_p": decoding.top_p, "max_tokens": decoding.max_tokens}
    if decoding.repetition_penalty is not None:
        body["repetition_penalty"] = decoding.repetition_penalty
    body["chat_template_kwargs"] = {"enable_thinking": decoding.thinking}
    if tools:
        body["tools"] = list(tools)
        body["tool_choice"] = "auto"
    for name in omit:
        body.pop(name, None)
    return body
