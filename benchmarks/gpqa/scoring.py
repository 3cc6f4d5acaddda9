"""GPQA letter extraction and scoring.

Protocol-v1 section 10 (GPQA): strip markdown emphasis (* _ `); then try the patterns in order and take the
LAST match of the FIRST pattern that matches:
  (1) "Answer: X" / "Final answer: X" (colons/whitespace between; case-insensitive; X may be parenthesised),
  (2) "option X" / "choice X" (optionally "option is X"),
  (3) a bare letter line: a line that is only an upper-case A-D (optionally "(B)", "B)" or "B.").
"Answer is X" is none of these (the protocol lists no such pattern). X must stand alone: the first letter of a
word ("Answer: because ...") is not an option letter.
"""

from __future__ import annotations

import re

from core.models import Score

_EMPHASIS = re.compile(r"[*_`]+")
_LETTER = r"\(?([A-Da-d])\)?(?![A-Za-z0-9])"
PATTERNS = (
    re.compile(r"\b(?:final\s+)?answer\b[:\s]*" + _LETTER, re.IGNORECASE),
    re.compile(r"\b(?:option|choice)\b\s*(?:is\b)?[:\s]*" + _LETTER, re.IGNORECASE),
    re.compile(r"^[ \t]*\(?([A-D])\)?[ \t]*\.?[ \t]*$", re.MULTILINE),
)
_ANSWER_LINE = re.compile(r"\b(?:final\s+)?answer\s*:", re.IGNORECASE)


def extract_letter(text: str | None) -> str | None:
    if not text:
        return None
    cleaned = _EMPHASIS.sub("", text)
    for pattern in PATTERNS:
        matches = pattern.findall(cleaned)
        if matches:
            return str(matches[-1]).upper()
    return None


def score_letter(text: str | None, gold_letter: str) -> Score:
    letter = extract_letter(text)
    if letter is None:
        if text and _ANSWER_LINE.search(_EMPHASIS.sub("", text)):
            feedback = ("Answer line without option letter: the 'Answer:' line must name exactly one of A, B, C, D "
                        "(e.g. 'Answer: B'), not the option's text.")
        else:
            feedback = ("No answer letter found: the reply must end with a line 'Answer: X' where X is one of "
                        "A, B, C, D.")
        return Score(value=0.0, feedback=feedback, malformed=True, metadata={"predicted": None, "gold": gold_letter})
    meta = {"predicted": letter, "gold": gold_letter}
    if letter == gold_letter:
        return Score(value=1.0, feedback=f"Correct: answered {letter}.", metadata=meta)
    return Score(value=0.0, metadata=meta,
                 feedback=f"Wrong option: answered {letter}, but the correct option is {gold_letter}.")
