"""What crosses the gateway: a framework's OpenAI chat-completions request in, a chat.completion (or its SSE
stream) out.

The agent's content (messages, tools) passes through; text-part lists become plain strings. Everything else the
framework sends (temperature, top_p, max_tokens, seed, stop, n, tool_choice, response_format, ...) is replaced by
the protocol's decoding; what it asked for is kept as `requested` for the card, so an override is visible.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core.canonical import canonical_json, sha256_hex
from core.topology import ChatReply

CONTENT_KEYS = ("messages", "tools")
IGNORED_KEYS = ("model", "stream", "stream_options")  # routing and transport, not decoding


class BadRequest(ValueError):
    """A request the gateway cannot forward (answered 400 with this message)."""


@dataclass(frozen=True)
class FrameworkRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    requested: tuple[tuple[str, str], ...]
    stream: bool
    include_usage: bool


def _text(content: Any) -> Any:
    """A list of text parts joined into one string; anything else unchanged."""
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    return content


def parse_request(body: Any) -> FrameworkRequest:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("'messages' must be a non-empty list of message objects")
    if body.get("n") not in (None, 1):
        raise BadRequest("the gateway answers one choice per request (n=1)")
    tools = body.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise BadRequest("'tools' must be a list of tool objects")
    clean = [{**m, "content": _text(m.get("content"))} if "content" in m else dict(m) for m in messages]
    requested = tuple(sorted((k, canonical_json(v)) for k, v in body.items()
                             if k not in CONTENT_KEYS and k not in IGNORED_KEYS))
    options = body.get("stream_options")
    return FrameworkRequest(messages=clean, tools=list(tools) if tools else None, requested=requested,
                            stream=bool(body.get("stream")),
                            include_usage=isinstance(options, dict) and bool(options.get("include_usage")))


def _tool_calls(reply: ChatReply, node_id: str) -> list[dict[str, Any]]:
    calls = []
    for index, call in enumerate(reply.tool_calls):
        arguments = call.get("arguments")
        calls.append({"id": str(call.get("id") or f"call_{sha256_hex(node_id)[:16]}_{index}"),
                      "type": "function",
                      "function": {"name": call["name"],
                                   "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}})
    return calls


def _usage(reply: ChatReply) -> dict[str, int]:
    prompt = int(reply.usage.get("prompt_tokens") or 0)
    completion = int(reply.usage.get("completion_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion(reply: ChatReply, model: str, completion_id: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    calls = _tool_calls(reply, reply.node_id)
    if calls:
        message["tool_calls"] = calls
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    return {"id": completion_id, "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": _usage(reply)}


def stream_events(reply: ChatReply, model: str, completion_id: str, include_usage: bool) -> list[bytes]:
    """The whole reply as server-sent events: one delta with the content and tool calls, one finish chunk, the
    usage chunk when asked for, then [DONE]."""
    done = completion(reply, model, completion_id)
    message, finish = done["choices"][0]["message"], done["choices"][0]["finish_reason"]
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
    if "tool_calls" in message:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    head = {"id": completion_id, "object": "chat.completion.chunk", "created": 0, "model": model}
    chunks = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
    if include_usage:
        chunks.append({**head, "choices": [], "usage": done["usage"]})
    return [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]
