"""GPQA letter extraction and scoring.

Protocol-v1 section 10 (GPQA): strip markdown emphasis (* _ `); then try the patterns in order and take the
LAST match of the FIRST pattern that matches:
  (1) "Answer: X" / "Final answer: X": the colon is required (whitespace around it is free, the keyword's case
      is free), X may be parenthesised,
  (2) "option X" / "choice X" (optionally "option is X", an optional colon),
  (3) a bare letter line: a line that is only A-D (optionally "(B)", "B)" or "B.").
X is an option letter: upper-case A-D only, standing alone. So "Answer: C ... I could answer a follow-up" is C
(the lower-case article "a" after "answer" is no option letter, and "answer a" has no colon), "answer: b" is no
letter, and "Answer: because ..." is not B. "Answer is X" is none of the patterns (the protocol lists no such
pattern).

Decision (issue 35 item 1), recorded with its evidence: the [v1] fork's code (core/tasks/gpqa.py at 6aaae89)
compiles its letter class with re.IGNORECASE and lets pattern (1) run without a colon (colon or whitespace), so
it reads the sentence above as A and "answer: b" as B. Section 10 writes the patterns as "Answer:/Final
answer: X" with X an option letter; this scorer follows that text (colon required, upper-case letters), so on
such replies it differs from the fork's code by design (tests/benchmarks/gpqa/test_gpqa_protocol_table.py
lists every such row).
"""

from __future__ import annotations

import re

from core.models import Score

_EMPHASIS = re.compile(r"[*_`]+")
# the keywords match in any case ((?i:...)); the option letter is upper-case A-D and stands alone
_LETTER = r"\(?([A-D])\)?(?![A-Za-z0-9])"
PATTERNS = (
    re.compile(r"\b(?i:(?:final\s+)?answer)\s*:\s*" + _LETTER),
    re.compile(r"\b(?i:option|choice)\b\s*(?i:is\b)?[:\s]*" + _LETTER),
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
