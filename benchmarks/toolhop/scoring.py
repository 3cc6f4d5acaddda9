"""ToolHop's answer matcher.

The final answer is the text after the LAST `<answer>` (up to `</answer>`). If the gold parses as a Python
literal (ast.literal_eval), the answer must parse to an equal literal (tried as written, without commas, and
without a trailing ".0"); otherwise the gold, lowercased, must be a substring of the answer lowercased with
commas removed and a trailing ".0" dropped. The row is also correct when the gold (same normalisation) appears
in the last tool result before the final message (AgentOutput.metadata["last_tool_result"]).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from core.models import Score

_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
GIVE_UP = frozenset({"", "unknown", "none", "n/a", "na", "not found", "i don't know", "cannot determine",
                     "cannot be determined", "no answer"})


def extract_final(text: str | None) -> str | None:
    if not text:
        return None
    opens = list(_OPEN.finditer(text))
    if not opens:
        return None
    rest = text[opens[-1].end():]
    close = _CLOSE.search(rest)
    return (rest[: close.start()] if close else rest).strip()


def normalize(text: str) -> str:
    value = str(text).lower().replace(",", "").strip()
    if value.endswith(".0"):
        value = value[:-2]
    return value


def _literal(text: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def matches(answer: str, gold: str) -> bool:
    is_literal, gold_value = _literal(gold)
    if is_literal:
        stripped = answer.strip().rstrip(".") if not answer.strip().endswith(".0") else answer.strip()
        for candidate in (answer, stripped, stripped.replace(",", ""), normalize(stripped)):
            ok, value = _literal(candidate)
            try:
                if ok and value == gold_value:
                    return True
            except Exception:  # exotic literal comparisons
                continue
        return False
    return normalize(gold) in normalize(answer)


def in_tool_result(gold: str, tool_result: str | None) -> bool:
    return bool(tool_result) and bool(normalize(gold)) and normalize(gold) in normalize(str(tool_result))


def score_answer(text: str | None, gold: str, last_tool_result: str | None = None) -> Score:
    answer = extract_final(text)
    via_tool = in_tool_result(gold, last_tool_result)
    meta: dict[str, Any] = {"predicted": answer, "gold": gold, "matched_via": None}
    if answer is not None and answer.lower().strip(" .") not in GIVE_UP and matches(answer, gold):
        meta["matched_via"] = "answer"
        return Score(value=1.0, metadata=meta, feedback=f"Correct: <answer> {answer[:200]!r} matches the gold answer.")
    if via_tool:
        meta["matched_via"] = "last_tool_result"
        return Score(value=1.0, metadata=meta,
                     feedback="Correct via the last tool result: the gold answer appears in it, though the final "
                              "<answer> did not match.")
    if answer is None:
        return Score(value=0.0, malformed=True, metadata=meta,
                     feedback="No <answer> tag found: the reply must end with <answer>VALUE</answer>.")
    if answer.lower().strip(" .") in GIVE_UP:
        return Score(value=0.0, metadata=meta,
                     feedback=f"Empty or 'unknown' answer inside <answer> ({answer!r}); the gold answer is {gold!r}. "
                              "Keep calling the tools until every hop is resolved.")
    return Score(value=0.0, metadata=meta,
                 feedback=f"Wrong answer: <answer> {answer[:200]!r} does not match the gold answer {gold!r}.")
