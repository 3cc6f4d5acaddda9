"""BFCL protocol metric: the official AST checker's verdict (0/1) plus feedback text for reflective methods.

The feedback names what went wrong in one first sentence, "Incorrect: <kind>.", followed by the checker's
own error message, where <kind> is one of

    no parsable function call | wrong function name | wrong number of function calls |
    missing required parameter | unexpected parameter | wrong argument type | wrong argument value

For the order-free parallel categories the checker only says that some expected call found no match; the
feedback then pairs expected and given calls by resemblance and reports the checker's verdict on the first
failing pair (a feedback heuristic: the 0/1 verdict is always the checker's own).
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from benchmarks.bfcl import checker
from benchmarks.bfcl.calls import Call, call_name, extract_calls, is_call_format
from benchmarks.bfcl.data import checker_category
from core.simulation import FailureMode
from core.models import AgentOutput, Row, Score

CORRECT_FEEDBACK = "Correct: the function call(s) match an accepted answer (official BFCL AST checker)."
FORMAT_FEEDBACK = (
    "Incorrect: no parsable function call in the required shape (BFCL's format check): every call must be an "
    'object with exactly one key, the function name, whose value is the object of arguments, like '
    '[{"function_name": {"argument": value}}].'
)
MALFORMED_FEEDBACK = (
    "Incorrect: no parsable function call. The answer had no tool call and no fenced json block holding a "
    'non-empty list of call objects like [{"function_name": {"argument": value}}].'
)

KIND_TEXT = {
    "wrong_function": "wrong function name",
    "wrong_call_count": "wrong number of function calls",
    "missing_argument": "missing required parameter",
    "unexpected_argument": "unexpected parameter",
    "wrong_type": "wrong argument type",
    "wrong_value": "wrong argument value",
    "checker_exception": "the call could not be checked",
}

FAILURE_MODES: tuple[FailureMode, ...] = (
    FailureMode(
        name="wrong_function",
        feedback_pattern=r"(?i)\bwrong function name\b",
        remedy="Call only a function listed in the provided schemas, the one whose description matches the "
               "request, and copy its name exactly as written, including any dots.",
        rate=0.15,
    ),
    FailureMode(
        name="missing_argument",
        feedback_pattern=r"(?i)\bmissing required parameter\b",
        remedy="Always pass every required parameter of the chosen function, with its value taken from the "
               "user's request.",
        rate=0.2,
    ),
    FailureMode(
        name="wrong_type_or_value",
        feedback_pattern=r"(?i)\bwrong argument (type|value)\b",
        remedy="Give every argument the exact JSON type its schema declares (numbers as numbers, never quoted) "
               "and the exact value stated in the request, without inventing or converting values.",
        rate=0.25,
    ),
    FailureMode(
        name="malformed_output",
        feedback_pattern=r"(?i)\bno parsable function call\b",
        remedy="Always answer with the function calls themselves, never with prose alone: make the tool calls, "
               "or end with one fenced json list of {\"function_name\": {arguments}} objects.",
        rate=0.15,
    ),
)


def score(row: Row, output: AgentOutput) -> Score:
    category = row.task["category"]
    calls = extract_calls(output, row.task["functions"])
    meta: dict[str, Any] = {"checker": "bfcl_eval.ast_checker", "checker_version": checker.bfcl_eval_version(),
                            "category": category}
    if calls is None:
        return Score(value=0.0, feedback=MALFORMED_FEEDBACK, malformed=True,
                     metadata={**meta, "failure": "no_parsable_call", "error_type": None, "n_calls": 0,
                               "source": "tool_calls" if output.tool_calls else "text"})
    ground_truth = row.gold["ground_truth"]
    meta["n_calls"] = len(calls)
    meta["source"] = "tool_calls" if output.tool_calls else "text"
    if not is_call_format(calls):  # BFCL's pipeline rejects these before its checker (decoder_wrong_output_format)
        return Score(value=0.0, feedback=FORMAT_FEEDBACK, malformed=True,
                     metadata={**meta, "failure": "wrong_output_format",
                               "error_type": "ast_decoder:decoder_wrong_output_format"})
    try:
        result = checker.run_ast_checker(row.task["functions"], calls, ground_truth, checker_category(category))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # The official checker indexes into the model's structure without guards; an answer shaped so that
        # it cannot be checked is a wrong answer, not an infrastructure failure (a retry reproduces it).
        feedback = f"Incorrect: {KIND_TEXT['checker_exception']} ({type(exc).__name__}: {exc})."
        return Score(value=0.0, feedback=feedback,
                     metadata={**meta, "failure": "checker_exception", "error_type": "checker_exception"})
    if result.get("valid"):
        return Score(value=1.0, feedback=CORRECT_FEEDBACK, metadata={**meta, "failure": None, "error_type": None})
    try:
        kind, detail = explain(result, calls, ground_truth, row.task["functions"])
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):  # feedback only; the verdict stands
        kind, detail = error_kind(str(result.get("error_type") or "")), str((result.get("error") or [""])[0])
    feedback = f"Incorrect: {KIND_TEXT[kind]}. {detail}".strip()
    return Score(value=0.0, feedback=feedback,
                 metadata={**meta, "failure": kind, "error_type": result.get("error_type")})


def error_kind(error_type: str) -> str:
    """Our failure kind for a checker error_type such as 'simple_function_checker:missing_required'."""
    family, _, leaf = error_type.partition(":")
    if leaf == "wrong_func_name":
        return "wrong_function"
    if leaf == "wrong_count":
        return "wrong_call_count"
    if leaf in ("missing_required", "missing_optional"):
        return "missing_argument"
    if leaf == "unexpected_param":
        return "unexpected_argument"
    if family == "type_error":
        return "wrong_type"
    return "wrong_value"  # value_error:*, dict_checker:*, list_dict_checker:*


def explain(result: dict[str, Any], calls: list[Call], ground_truth: list[dict[str, Any]],
            functions: list[dict[str, Any]]) -> tuple[str, str]:
    """(failure kind, detail sentence) for a checker verdict that is not valid."""
    error_type = str(result.get("error_type") or "")
    errors = result.get("error") or []
    if error_type.endswith(":wrong_count"):
        return "wrong_call_count", (f"Expected {len(ground_truth)} call(s), got {len(calls)}; make exactly one call "
                                    "per action the request asks for.")
    if not error_type.endswith(":cannot_find_match"):
        return error_kind(error_type), " ".join(str(e) for e in errors[:2])
    return _explain_unordered(errors, calls, ground_truth, functions)


def _explain_unordered(errors: list[Any], calls: list[Call], ground_truth: list[dict[str, Any]],
                       functions: list[dict[str, Any]]) -> tuple[str, str]:
    """Order-free categories: the checker only reports that some expected call found no match (greedily).

    Feedback pairs each expected call with the answer's call that resembles it most (best overall pairing)
    and reports the checker's verdict on the first pair that fails.
    """
    expected_names = Counter(call_name(c) for c in ground_truth)
    got_names = Counter(call_name(c) for c in calls)
    if expected_names != got_names:
        missing = sorted((expected_names - got_names).elements())
        extra = sorted((got_names - expected_names).elements())
        return "wrong_function", (f"Calls to {missing} were expected but the answer called {extra} instead "
                                  "(calls are matched in any order).")
    pairing = _best_pairing(calls, ground_truth)
    if pairing is not None:
        for position, (expected, produced) in enumerate(zip(ground_truth, pairing)):
            verdict = checker.run_ast_checker(functions, [produced], [expected], "multiple")
            if not verdict.get("valid"):
                detail = " ".join(str(e) for e in (verdict.get("error") or [])[:2])
                where = f"(expected call {position + 1} of {len(ground_truth)}; calls are matched in any order)"
                return error_kind(str(verdict.get("error_type") or "")), f"{detail} {where}"
    # the checker's greedy matching failed where a full pairing exists: report its own first sub-error
    header = str(errors[0]) if errors and isinstance(errors[0], str) else ""
    candidates = [entry for item in errors if isinstance(item, dict) for entry in item.values()
                  if isinstance(entry, dict)]
    if not candidates:
        return "wrong_value", header
    sub_errors = candidates[0].get("sub_error") or []
    detail = " ".join(str(e) for e in sub_errors[:2])
    return error_kind(str(candidates[0].get("sub_error_type") or "")), f"{detail} ({header})".strip()


_MAX_PAIRING_CALLS = 7  # 7! orderings at most; BFCL parallel rows have fewer calls


def _best_pairing(calls: list[Call], ground_truth: list[dict[str, Any]]) -> list[Call] | None:
    """The answer's calls reordered to face the expected calls they resemble most (None when too many)."""
    n = len(calls)
    if n != len(ground_truth) or n > _MAX_PAIRING_CALLS:
        return None
    closeness = [[_closeness(call, expected) for call in calls] for expected in ground_truth]
    best = max(itertools.permutations(range(n)), key=lambda order: sum(closeness[i][j] for i, j in enumerate(order)))
    return [calls[j] for j in best]


def _closeness(produced: Call, expected: dict[str, Any]) -> int:
    """How well a call matches an expected call: arguments with an allowed value minus wrong or absent ones."""
    name, arguments = next(iter(produced.items()))
    expected_name, allowed = next(iter(expected.items()))
    if name != expected_name or not isinstance(arguments, dict) or not isinstance(allowed, dict):
        return -1_000
    score = 0
    for param, value in arguments.items():
        options = allowed.get(param, [])
        score += 1 if any(_same(value, option) for option in options) else -1
    for param, options in allowed.items():
        if param not in arguments and "" not in options:
            score -= 1  # a parameter the expected call needs is absent
    return score


def _same(value: Any, option: Any) -> bool:
    if isinstance(value, str) and isinstance(option, str):
        return _standardize(value) == _standardize(option)
    return bool(value == option)


def _standardize(text: str) -> str:
    # the checker's own normalisation for strings (spaces and ,./-_*^ ignored, case-insensitive)
    return "".join(ch for ch in text if ch not in " ,./-_*^").lower().replace("'", '"')
