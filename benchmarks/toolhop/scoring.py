"""ToolHop's answer matcher (protocol-v1 §5.7 "ToolHop matcher on final answer, else on selected agent's last tool
result"; §10 ToolHop "Scoring").

Exactly the matcher the protocol names, applied to the raw final message:
  * the solution is the text after the last "<answer>" (if the tag occurs), cut at the first "</answer>" after
    it (if that occurs); with no tag the whole final message is the solution. Tags are matched as written
    (lower case), like the matcher does;
  * if the gold parses as a Python literal (ast.literal_eval of the stripped gold), the stripped solution must
    parse to an equal literal -- no other rewriting ("1,000" is the tuple (1, 0), not 1000);
  * otherwise the gold with one trailing ".0" dropped, lowercased, must be a substring of the solution with one
    trailing ".0" dropped, commas removed, lowercased;
  * in both cases the row is also correct when the gold (same normalisation) is a substring of the last tool
    result before the final message (AgentOutput.metadata["last_tool_result"], set by the topology).
No answer is rejected for looking like a refusal: the matcher has no such rule.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from core.models import Score

_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
# Answers a topology's vote treats as abstentions (voting only; the scorer never looks at this list).
GIVE_UP = frozenset({"", "unknown", "none", "n/a", "na", "not found", "i don't know", "cannot determine",
                     "cannot be determined", "no answer"})


def solution_text(text: str | None) -> str:
    """What the matcher compares: the text after the last "<answer>", up to "</answer>"; else the whole text."""
    solution = text or ""
    if "<answer>" in solution:
        solution = solution.split("<answer>")[-1]
    if "</answer>" in solution:
        solution = solution.split("</answer>")[0]
    return solution


def extract_final(text: str | None) -> str | None:
    """The tagged answer (for voting and feedback): text after the last <answer>, stripped; None without a tag."""
    if not text:
        return None
    opens = list(_OPEN.finditer(text))
    if not opens:
        return None
    rest = text[opens[-1].end():]
    close = _CLOSE.search(rest)
    return (rest[: close.start()] if close else rest).strip()


def normalize(text: str) -> str:
    """The matcher's haystack normalisation: one trailing ".0" dropped, commas removed, lowercased."""
    return str(text).removesuffix(".0").replace(",", "").lower()


def _needle(gold: str) -> str:
    return str(gold).removesuffix(".0").lower()


def _literal(text: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(text.strip())
    except Exception:  # the matcher treats any parse failure as "not a literal"
        return False, None


def matches(solution: str, gold: str) -> bool:
    """The matcher on the final answer: literal equality if the gold is a literal, else substring."""
    is_literal, gold_value = _literal(gold)
    if not is_literal:
        return _needle(gold) in normalize(solution)
    ok, value = _literal(solution)
    return bool(ok and gold_value == value)


def in_tool_result(gold: str, tool_result: str | None) -> bool:
    return bool(tool_result) and _needle(gold) in normalize(str(tool_result))


def score_answer(text: str | None, gold: str, last_tool_result: str | None = None) -> Score:
    solution = solution_text(text)
    tagged = "<answer>" in (text or "")
    meta: dict[str, Any] = {"predicted": solution.strip(), "gold": gold, "matched_via": None,
                            "answer_tag": tagged}
    if matches(solution, gold):
        meta["matched_via"] = "answer"
        return Score(value=1.0, metadata=meta, malformed=not tagged,
                     feedback=f"Correct: the final answer {solution.strip()[:200]!r} matches the gold answer.")
    if in_tool_result(gold, last_tool_result):
        meta["matched_via"] = "last_tool_result"
        return Score(value=1.0, metadata=meta, malformed=not tagged,
                     feedback="Correct via the last tool result: the gold answer appears in it, though the final "
                              "answer did not match.")
    if not tagged:
        return Score(value=0.0, malformed=True, metadata=meta,
                     feedback="No <answer> tag found and the reply does not contain the gold answer: the reply "
                              "must end with <answer>VALUE</answer>.")
    if solution.strip().lower().strip(" .") in GIVE_UP:
        return Score(value=0.0, metadata=meta,
                     feedback=f"Empty or 'unknown' answer inside <answer> ({solution.strip()!r}); the gold answer "
                              f"is {gold!r}. Keep calling the tools until every hop is resolved.")
    return Score(value=0.0, metadata=meta,
                 feedback=f"Wrong answer: <answer> {solution.strip()[:200]!r} does not match the gold answer "
                          f"{gold!r}.")
