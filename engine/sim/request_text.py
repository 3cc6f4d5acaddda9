"""Reading an OpenAI chat-completions request body for the simulated policy, and its seed-derived draws."""

from __future__ import annotations

import hashlib
import random
from typing import Any, Mapping, Sequence


def _int_from_sha256(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def mode_draw(row_id: str, seed: int, mode_name: str) -> float:
    """u_m of the accuracy function: uniform in [0, 1) from sha256 of (row id, seed, mode name)."""
    return _int_from_sha256(f"{row_id}|{seed}|{mode_name}") / 2.0**64


def reply_rng(row_id: str, seed: int) -> random.Random:
    """The RNG handed to `benchmark.simulate` for (row, seed)."""
    return random.Random(_int_from_sha256(f"{row_id}|{seed}"))


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a message: a string content, or the joined text parts of a list content."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


def all_text(messages: Sequence[Mapping[str, Any]]) -> str:
    chunks = []
    for message in messages:
        chunks.append(message_text(message))
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping):
                fn = call.get("function")
                if isinstance(fn, Mapping):
                    chunks.append(str(fn.get("name", "")))
                    chunks.append(str(fn.get("arguments", "")))
    return "\n".join(chunks)


def system_prompt_of(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(message_text(m) for m in messages if m.get("role") in ("system", "developer"))


def offers_tools(body: Mapping[str, Any]) -> bool:
    """True when the request offers tools the reply may call (`tools` non-empty, `tool_choice` not "none")."""
    return bool(body.get("tools")) and body.get("tool_choice") != "none"


def offered_tool_names(body: Mapping[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            names.append(fn["name"])
    return names


def request_seed_of(body: Mapping[str, Any]) -> int:
    seed = body.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, (int, float)):
        return 0
    return int(seed)
