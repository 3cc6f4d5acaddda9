"""Read a BFCL answer as the call list handed to the official checker (protocol-v1 section 10, BFCL).

Two sources:
* native tool calls (single, independent): `AgentOutput.tool_calls`, the calls of the first model message
  that has any, in OpenAI shape {"name", "arguments"} (arguments a JSON string or a dict), or wrapped as
  {"type": "function", "function": {...}}; each becomes {name: arguments}. Tool names are mapped back to the
  BFCL names the tools were offered under ("math_factorial" -> "math.factorial", the inverse of
  benchmarks.bfcl.tools' own encoding) when the row's functions are given;
* text (multi-agent roles): "contract JSON list in the last fenced block that is a list of objects": the LAST
  fenced block whose JSON is a non-empty list of objects, handed on AS WRITTEN. No call shape is rewritten:
  {"name": f, "arguments": {...}} reaches the official format check and checker as the model wrote it (and
  fails there, as in BFCL's own pipeline). A literal TERMINATE marker (group-chat stop word) is removed
  first so it cannot break a fence. Non-finite numbers (NaN, Infinity) are not JSON: such a block does not
  parse.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from core.canonical import canonical_json
from core.models import AgentOutput

from benchmarks.bfcl.tools import original_names

_FENCE_RE = re.compile(r"```(?:\w*)\s*([\s\S]*?)\s*```")
_TERMINATE_RE = re.compile(r"\bTERMINATE\b")

Call = dict[str, Any]  # canonically {function_name: {argument: value}}; text answers are passed on as written


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
    """The last fenced block whose JSON is a non-empty list of objects, unchanged; None when there is none."""
    text = _TERMINATE_RE.sub("", text)
    for block in reversed(_FENCE_RE.findall(text)):
        try:
            parsed = _loads(block)
        except ValueError:
            continue
        if isinstance(parsed, list) and parsed and all(isinstance(item, dict) for item in parsed):
            return parsed
    return None


def is_call_format(calls: list[Any]) -> bool:
    """BFCL's own format gate before the AST checker (bfcl_eval.utils.is_function_calling_format_output):
    a list of dicts, each with exactly one key whose value is a dict (exact types)."""
    if type(calls) is not list:
        return False
    for item in calls:
        if type(item) is not dict or len(item) != 1 or type(next(iter(item.values()))) is not dict:
            return False
    return True


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
