"""Simulated BFCL replies for the labelled simulated endpoint.

`simulate(row, None, rng)` builds the correct call list from the possible answers (the first allowed value
of each parameter; "" as first value means the optional parameter is left out) and `simulate(row, mode,
rng)` corrupts it to exhibit one failure mode of `scoring.FAILURE_MODES`. A reply carries the calls twice:
as OpenAI tool calls (tool names "." -> "_", JSON-string arguments) for endpoints that were offered tools,
and as the contract's fenced json list (BFCL names) in the text for those that were not.
All randomness comes from `rng`.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from benchmarks.bfcl.calls import Call, call_name
from benchmarks.bfcl.tools import tool_name
from core.simulation import SimReply
from core.models import Row

MALFORMED_TEXT = ("I would answer this request by calling one of the available functions with the values the "
                  "user gave.")
_MISSING = object()


def simulate(row: Row, mode: str | None, rng: random.Random) -> SimReply:
    functions = {f["name"]: f for f in row.task["functions"]}
    calls = correct_calls(row.gold["ground_truth"], functions)
    if mode is None:
        return reply(calls)
    if mode == "malformed_output":
        return SimReply(content=MALFORMED_TEXT)
    if mode == "wrong_function":
        return reply(_wrong_function(calls, functions, rng))
    if mode == "missing_argument":
        return reply(_missing_argument(calls, row.gold["ground_truth"], rng))
    if mode == "wrong_type_or_value":
        return reply(_wrong_type_or_value(calls, row.gold["ground_truth"], rng))
    raise ValueError(f"unknown BFCL failure mode {mode!r}")


def reply(calls: list[Call]) -> SimReply:
    text = "```json\n" + json.dumps(calls, ensure_ascii=False) + "\n```"
    tool_calls = tuple(
        {"name": tool_name(call_name(c)), "arguments": json.dumps(c[call_name(c)], ensure_ascii=False)}
        for c in calls
    )
    return SimReply(content=text, tool_calls=tool_calls)


# --- the correct answer ------------------------------------------------------------------------------------

def correct_calls(ground_truth: list[dict[str, Any]], functions: dict[str, dict[str, Any]]) -> list[Call]:
    calls: list[Call] = []
    for expected in ground_truth:
        name, allowed = next(iter(expected.items()))
        parameters = (functions.get(name) or {}).get("parameters") or {}
        properties = parameters.get("properties") or {}
        required = set(parameters.get("required") or [])
        arguments: dict[str, Any] = {}
        for param, options in allowed.items():
            if param not in properties:
                continue  # a few possible answers list a parameter the schema lacks; the checker rejects it
            if param in required:
                options = [option for option in options if option != ""]  # "" listed first for a required one
            value = _materialize(options, properties[param])
            if value is not _MISSING:
                arguments[param] = value
        calls.append({name: arguments})
    return calls


def _materialize(options: list[Any], schema: dict[str, Any]) -> Any:
    """The first allowed value, built out for dict and list-of-dict parameters (their options are templates)."""
    if not options or options[0] == "":
        return _MISSING
    first = options[0]
    kind = schema.get("type")
    if kind == "dict" and isinstance(first, dict):
        return _build_dict(first)
    item_kind = (schema.get("items") or {}).get("type")
    if kind in ("array", "tuple") and item_kind == "dict" and isinstance(first, list):
        return [_build_dict(item) if isinstance(item, dict) else item for item in first]
    return copy.deepcopy(first)


def _build_dict(template: dict[str, Any]) -> dict[str, Any]:
    built: dict[str, Any] = {}
    for key, options in template.items():
        if isinstance(options, list):
            if options and options[0] != "":
                built[key] = copy.deepcopy(options[0])
        else:
            built[key] = copy.deepcopy(options)
    return built


# --- failure modes -----------------------------------------------------------------------------------------

def _wrong_function(calls: list[Call], functions: dict[str, dict[str, Any]], rng: random.Random) -> list[Call]:
    calls = copy.deepcopy(calls)
    index = rng.randrange(len(calls))
    name = call_name(calls[index])
    others = sorted(n for n in functions if n != name)
    if others:
        wrong = rng.choice(others)
    else:
        wrong = name.rsplit(".", 1)[-1] + "_helper"
        while wrong in functions or tool_name(wrong) in {tool_name(n) for n in functions}:
            wrong += "_x"
    calls[index] = {wrong: calls[index][name]}
    return calls


def _missing_argument(calls: list[Call], ground_truth: list[dict[str, Any]], rng: random.Random) -> list[Call]:
    calls = copy.deepcopy(calls)
    choices: list[tuple[int, str]] = []
    unambiguous: list[tuple[int, str]] = []
    for index, (call, expected) in enumerate(zip(calls, ground_truth)):
        name = call_name(call)
        for param in call[name]:
            if "" not in expected[name].get(param, [""]):  # leaving it out is not accepted
                choices.append((index, param))
                if all("" not in options for options in _same_function_options(ground_truth, name, param)):
                    unambiguous.append((index, param))  # nor accepted by a sibling call (parallel rows)
    choices = unambiguous or choices
    if not choices:
        raise ValueError("no call of this row has a parameter whose omission the checker rejects")
    index, param = rng.choice(choices)
    del calls[index][call_name(calls[index])][param]
    return calls


def _wrong_type_or_value(calls: list[Call], ground_truth: list[dict[str, Any]], rng: random.Random) -> list[Call]:
    calls = copy.deepcopy(calls)
    choices: list[tuple[int, str, Any]] = []
    unambiguous: list[tuple[int, str, Any]] = []
    for index, (call, expected) in enumerate(zip(calls, ground_truth)):
        name = call_name(call)
        for param, value in call[name].items():
            for candidate in _corruptions(value, rng):
                if not any(_accepted(candidate, option) for option in expected[name].get(param, [])):
                    choices.append((index, param, candidate))
                    siblings = _same_function_options(ground_truth, name, param)
                    if not any(_accepted(candidate, option) for options in siblings for option in options):
                        unambiguous.append((index, param, candidate))  # wrong for every sibling call too
                    break
    choices = unambiguous or choices
    if not choices:
        raise ValueError("no argument of this row can be given a rejected scalar or list value")
    index, param, candidate = rng.choice(choices)
    calls[index][call_name(calls[index])][param] = candidate
    return calls


def _same_function_options(ground_truth: list[dict[str, Any]], name: str, param: str) -> list[list[Any]]:
    """The allowed values of `param` in every expected call of function `name`."""
    return [expected[name].get(param, [""]) for expected in ground_truth if call_name(expected) == name]


def _corruptions(value: Any, rng: random.Random) -> list[Any]:
    """Wrong versions of a value: a quoted number (type error) or a different value of the same type."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [str(value), value + 7919] if rng.random() < 0.5 else [value + 7919]
    if isinstance(value, float):
        return [str(value), value + 7919.5] if rng.random() < 0.5 else [value + 7919.5]
    if isinstance(value, str):
        return [value + " unspecified"]
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
        return [value + value[-1:]]
    if isinstance(value, dict):
        for key in sorted(value):
            inner = [c for c in _corruptions(value[key], rng) if type(c) is type(value[key])]
            if inner:
                return [{**value, key: inner[0]}]
    return []


def _accepted(candidate: Any, option: Any) -> bool:
    if isinstance(candidate, str) and isinstance(option, str):
        strip = " ,./-_*^"
        return ("".join(c for c in candidate if c not in strip).lower()
                == "".join(c for c in option if c not in strip).lower())
    return bool(candidate == option) and type(candidate) is type(option)
