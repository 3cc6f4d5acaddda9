"""GPQA scorer edge cases, one row per rule of protocol-v1 (section 5.7 metric, section 10 letter extraction).

Every case names the protocol line it follows. The scorer is driven through BENCHMARK.score (the code path jobs
use); the expected letter is what the protocol's extraction rule yields on the raw model output: "Answer:/Final
answer: X" with the colon, X an upper-case option letter A-D (issue 35 item 1).

Cross-check with the [v1] fork's code (core/tasks/gpqa.py at 6aaae89, read by hand): `v1` is the letter that
code yields. It agrees on every row but those marked DIFFERS, where it reads lower-case letters (re.IGNORECASE
on the letter class) or "answer" without a colon; section 10's text is followed there (scoring.py docstring).
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from benchmarks.gpqa import BENCHMARK, extract_letter
from core.models import AgentOutput, Row

S10 = "protocol-v1 §10 GPQA: "
S57 = "protocol-v1 §5.7 gpqa: option letter == gold letter"


class Case(NamedTuple):
    text: str
    letter: str | None  # the extracted letter
    cite: str
    v1: str | None | bool = True  # the fork code's letter; True = the same as `letter`


DIFFERS = " (DIFFERS from the [v1] fork's code, see the module docstring)"


GOLD = "B"
TABLE = [
    Case("Reasoning.\nAnswer: B", "B", S10 + "pattern 1 'Answer: X'"),
    Case("Final answer: C", "C", S10 + "pattern 1 'Final answer: X'"),
    Case("**Answer:** B", "B", S10 + "strip markdown emphasis before matching"),
    Case("__Final answer__: `D`", "D", S10 + "strip markdown emphasis (* _ `) before matching"),
    Case("answer: B", "B", S10 + "pattern 1's keyword matches in any case"),
    Case("ANSWER: D", "D", S10 + "pattern 1's keyword matches in any case"),
    Case("Answer : B", "B", S10 + "pattern 1: whitespace around the colon is free"),
    Case("Answer: C. This is my final choice; I could answer a follow-up if needed.", "C",
         S10 + "issue 35's case: 'answer a' is no 'Answer: X' (no colon, lower-case)" + DIFFERS, "A"),
    Case("Answer: C\nIf you want, I could answer a follow-up question.", "C",
         S10 + "issue 35's case on two lines" + DIFFERS, "A"),
    Case("answer: b", None, S10 + "X is an upper-case option letter" + DIFFERS, "B"),
    Case("**Answer:** (c)", None, S10 + "X is an upper-case option letter, also parenthesised" + DIFFERS, "C"),
    Case("Answer B", None, S10 + "pattern 1 needs the colon ('Answer:/Final answer: X')" + DIFFERS, "B"),
    Case("Final answer (C)", None, S10 + "pattern 1 needs the colon" + DIFFERS, "C"),
    Case("Answer: B, though one could answer C", "B",
         S10 + "a later 'answer C' without colon is no pattern-1 match" + DIFFERS, "C"),
    Case("option C, not choice a", "C", S10 + "pattern 2: a lower-case letter is no option letter" + DIFFERS, "A"),
    Case("Answer: (A)", "A", S10 + "pattern 1 with a parenthesised letter"),
    Case("Answer: A\nOn reflection, Answer: B", "B", S10 + "last match of the first matching pattern"),
    Case("Answer: B\nbut option C also looks plausible", "B",
         S10 + "patterns in order: pattern 1 wins over a later pattern-2 match"),
    Case("Answer: C\nB", "C", S10 + "patterns in order: pattern 1 wins over a later bare letter line"),
    Case("The correct option is D.", "D", S10 + "pattern 2 'option X' (with 'is')"),
    Case("choice: A", "A", S10 + "pattern 2 'choice X'"),
    Case("option A is wrong, so option C", "C", S10 + "pattern 2: last match wins"),
    Case("Long reasoning\nD\n", "D", S10 + "pattern 3 bare letter line"),
    Case("Long reasoning\n(C)", "C", S10 + "pattern 3 bare letter line, parenthesised"),
    Case("Long reasoning\nA.\nthen\nB", "B", S10 + "pattern 3: last bare letter line wins"),
    Case("reasoning\nb", None, S10 + "pattern 3 is a bare option letter A-D; a lower-case word is not one"),
    Case("The answer is B", None, S10 + "the protocol's patterns do not include 'answer is X'"),
    Case("Answer: because the energy is low", None,
         S10 + "X is an option letter, not the first letter of a word" + DIFFERS, "B"),
    Case("Answer: Because the energy is low", None,
         S10 + "X stands alone: the capital of a word is no option letter" + DIFFERS, "B"),
    Case("B. Because the field is larger", None,
         S10 + "a line with text after the letter is not a bare letter line" + DIFFERS, "B"),
    Case("Answer: E", None, S10 + "only A-D are option letters"),
    Case("", None, S57 + "; no letter -> 0"),
]


def _row() -> Row:
    return Row(id="gpqa_protocol", dataset="gpqa", task={"question": "q", "options": ["a", "b", "c", "d"]},
               gold={"correct_letter": GOLD})


def test_table_is_large_enough_and_cited():
    assert len(TABLE) >= 15
    assert all(case.cite.startswith("protocol-v1 §") for case in TABLE)


def test_every_difference_from_the_fork_code_is_marked():
    """protocol-v1 §10: where the [v1] fork's code reads another letter, the row says so (and why)."""
    for case in TABLE:
        v1 = case.letter if case.v1 is True else case.v1
        assert (v1 != case.letter) == (DIFFERS in case.cite), case.text


@pytest.mark.parametrize("case", TABLE, ids=[f"{i}:{c.text[:30]!r}" for i, c in enumerate(TABLE)])
def test_gpqa_protocol_case(case: Case):
    assert extract_letter(case.text) == case.letter, case.cite
    score = BENCHMARK.score(_row(), AgentOutput(text=case.text))
    assert score.value == (1.0 if case.letter == GOLD else 0.0), case.cite
    assert score.metadata["predicted"] == case.letter
    assert score.malformed == (case.letter is None)
