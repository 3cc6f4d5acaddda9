"""Read a BFCL answer: canonical call lists `[{"function_name": {"arg": value}}, ...]`.

Two sources (protocol-v1 section 10):
* native tool calls (single, independent): `AgentOutput.tool_calls`, the calls of the first model message
  that has any, in OpenAI shape {"name", "arguments"} (arguments a JSON string or a dict), or wrapped as
  {"type": "function", "function": {...}}; tool names are mapped back to BFCL names ("math_factorial" ->
  "math.factorial") when the row's functions are given;
* text (multi-agent roles): the LAST fenced block of `AgentOutput.text` that parses as a non-empty JSON list
  of call objects. Common non-canonical call shapes ({"name": f, "arguments": {...}} and the like) are
  rewritten to {f: {...}}; a literal TERMINATE marker (group-chat stop word) is ignored. Text names are
  kept as written.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from core.canonical import canonical_json
from core.models import AgentOutput

from benchmarks.bfcl.tools import original_names

_FENCE_RE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)```", re.DOTALL)
_TERMINATE_RE = re.compile(r"\bTERMINATE\b")
_NAME_ARGS_KEYS = (("name", "arguments"), ("name", "args"), ("fn_name", "args"), ("function_name", "arguments"),
                   ("function", "arguments"), ("function", "args"))

Call = dict[str, dict[str, Any]]


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-finite number {token} in a call")


def _loads(text: str) -> Any:
    """json.loads refusing NaN/Infinity (they have no canonical JSON)."""
    return json.loads(text, parse_constant=_reject_constant)


def extract_calls(output: AgentOutput, functions: list[dict[str, Any]] | None = None) -> list[Call] | None:
    """The answer's call list, or None when nothing parses (malformed)."""
    if output.tool_calls:
        return calls_from_tool_calls(output.tool_calls, functions)
    return calls_from_text(output.text or "")


def calls_from_tool_calls(tool_calls: Iterable[dict[str, Any]],
                          functions: list[dict[str, Any]] | None = None) -> list[Call] | None:
    names = original_names(functions or [])
    calls: list[Call] = []
    for tool_call in tool_calls:
        wrapped = tool_call.get("function")
        body: dict[str, Any] = wrapped if isinstance(wrapped, dict) else tool_call
        name = body.get("name")
        arguments = body.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = _loads(arguments) if arguments.strip() else {}
            except ValueError:
                return None
        if not isinstance(name, str) or not name or not isinstance(arguments, dict):
            return None
        calls.append({names.get(name, name): arguments})
    return calls or None


def calls_from_text(text: str) -> list[Call] | None:
    text = _TERMINATE_RE.sub("", text)
    for block in reversed(_FENCE_RE.findall(text)):
        try:
            parsed = _loads(block)
        except ValueError:
            continue
        calls = _canonical_list(parsed)
        if calls is not None:
            return calls
    return None


def _canonical_list(parsed: Any) -> list[Call] | None:
    if not isinstance(parsed, list) or not parsed:
        return None
    calls: list[Call] = []
    for item in parsed:
        call = _canonical_call(item)
        if call is None:
            return None
        calls.append(call)
    return calls


def _canonical_call(item: Any) -> Call | None:
    if not isinstance(item, dict):
        return None
    for name_key, args_key in _NAME_ARGS_KEYS:
        name, arguments = item.get(name_key), item.get(args_key)
        if len(item) <= 3 and isinstance(name, str) and isinstance(arguments, dict):
            return {name: arguments}
    if len(item) == 1:
        name, arguments = next(iter(item.items()))
        if isinstance(arguments, dict):
            return {name: arguments}
    return None


def call_name(call: Call) -> str:
    return next(iter(call))


def vote_key(calls: list[Call] | None, order_free: bool) -> str | None:
    """Canonical JSON of the call list (argument order never matters; call order not when `order_free`)."""
    if calls is None:
        return None
    items = [canonical_json(call) for call in calls]
    if order_free:
        items.sort()
    return "[" + ",".join(items) + "]"
