"""LCB scorer edge cases, one row per rule of protocol-v1 §5.7 lcb ("passes first 3 private tests"; runners: all
private tests) and §10 LiveCodeBench ("stdin: exit 0 + exact or line-wise match with numeric tokens as decimals;
functional: Solution().fn ...; Code extraction: last fenced block that parses, preferring python/py labels,
skipping blocks starting with { or [").

Cross-check: every stdout comparison is also decided by LiveCodeBench's own stdin grader
(lcb_runner/evaluation/testing_util.py: get_stripped_lines, convert_line_to_decimals and grade_stdio's
line-by-line loop) reproduced below as a TEST ORACLE. The sandboxed cases run real subprocesses.
"""

from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple

import pytest

from benchmarks.lcb import LCBBenchmark
from benchmarks.lcb.scorer import compare_stdout
from benchmarks.sandbox import SandboxLimits
from core.models import AgentOutput, Row


# ---------------------------------------------------------------- oracle: LiveCodeBench testing_util, verbatim
def get_stripped_lines(val: str):
    ## you don't want empty lines to add empty list after splitlines!
    val = val.strip()

    return [val_line.strip() for val_line in val.split("\n")]


def convert_line_to_decimals(line: str) -> tuple[bool, list[Decimal]]:
    try:
        decimal_line = [Decimal(elem) for elem in line.split()]
    except:  # noqa: E722
        return False, []
    return True, decimal_line


def lcb_stdout_accepted(prediction: str, gt_out: str) -> bool:
    """grade_stdio's comparison of one test (WA paths return False)."""
    stripped_prediction_lines = get_stripped_lines(prediction)
    stripped_gt_out_lines = get_stripped_lines(gt_out)
    if len(stripped_prediction_lines) != len(stripped_gt_out_lines):
        return False
    for stripped_prediction_line, stripped_gt_out_line in zip(stripped_prediction_lines, stripped_gt_out_lines):
        if stripped_prediction_line == stripped_gt_out_line:
            continue
        success, decimal_prediction_line = convert_line_to_decimals(stripped_prediction_line)
        if not success:
            return False
        success, decimal_gtout_line = convert_line_to_decimals(stripped_gt_out_line)
        if not success:
            return False
        if decimal_prediction_line == decimal_gtout_line:
            continue
        return False
    return True


# ---------------------------------------------------------------- stdout comparison table
CMP = "protocol-v1 §10 LCB: stdin: exact or line-wise match with numeric tokens as decimals"


class Compare(NamedTuple):
    expected: str
    got: str
    accepted: bool
    cite: str


COMPARISONS = [
    Compare("3\n", "3", True, CMP + " (surrounding whitespace)"),
    Compare("1 2\n3", "1  2 \n 3 ", True, CMP + " (line-wise, tokens as decimals)"),
    Compare("0.5", "0.50", True, CMP + " (decimals: 0.5 == 0.50)"),
    Compare("1000", "1e3", True, CMP + " (decimals: 1e3 == 1000)"),
    Compare("0", "-0", True, CMP + " (decimals: -0 == 0)"),
    Compare("1", "1.0000001", False, CMP + " (decimals are exact: no tolerance)"),
    Compare("50000000000000000", "50000000000000001", False, CMP + " (no float rounding)"),
    Compare("YES", "yes", False, CMP + " (case matters)"),
    Compare("a b", "a  b", False, CMP + " (a non-numeric line must match exactly)"),
    Compare("1\n2", "1\n\n2", False, CMP + " (a blank line is a line)"),
    Compare("1 2", "1 2 3", False, CMP + " (token counts differ)"),
    Compare("", "\n", True, CMP + " (empty output)"),
    Compare("nan", "NaN", False, CMP + " (Decimal NaN never equals NaN)"),
    Compare("Infinity", "inf", True, CMP + " (Decimal infinities)"),
]


def test_comparison_table_is_cited():
    assert len(COMPARISONS) + len(PROGRAMS) >= 15
    assert all(c.cite.startswith("protocol-v1 §") for c in [*COMPARISONS, *PROGRAMS])


@pytest.mark.parametrize("case", COMPARISONS, ids=[f"{i}:{c.got[:20]!r}" for i, c in enumerate(COMPARISONS)])
def test_lcb_stdout_comparison(case: Compare):
    assert (compare_stdout(case.expected, case.got) is None) == case.accepted, case.cite
    assert lcb_stdout_accepted(case.got, case.expected) == case.accepted, case.cite


# ---------------------------------------------------------------- sandboxed programs
BENCH = LCBBenchmark(limits=SandboxLimits(cpu_seconds=2, wall_seconds=4, memory_bytes=1024 ** 3))
DOUBLE = [{"input": f"{n}\n", "output": f"{2 * n}\n"} for n in (1, 2, 3, 4)]
STDIN_ROW = Row(id="lcb_protocol", dataset="lcb", task={"mode": "stdin", "question_content": "double n"},
                gold={"mode": "stdin", "private_tests": DOUBLE})
FN_ROW = Row(id="lcb_fn", dataset="lcb", task={"mode": "functional", "question_content": "pair"},
             gold={"mode": "functional", "func_name": "pair",
                   "private_tests": [{"input": "1\n2", "output": "[1, 2]"}, {"input": "3\n4", "output": "[3, 4]"}]})
GOOD = "n = int(input())\nprint(2 * n)\n"
FIRST3 = "n = int(input())\nprint(2 * n if n < 4 else 0)\n"
M57 = "protocol-v1 §5.7 lcb: passes first 3 private tests"
EXT = "protocol-v1 §10 LCB: Code extraction: last fenced block that parses, preferring python/py labels"


class Program(NamedTuple):
    row: Row
    text: str
    protocol_value: float
    runner_value: float  # all private tests
    cite: str


PROGRAMS = [
    Program(STDIN_ROW, f"```python\n{GOOD}```", 1.0, 1.0, M57),
    Program(STDIN_ROW, f"```python\n{FIRST3}```", 1.0, 0.0, M57 + " (a failure on test 4 is outside the metric)"),
    Program(STDIN_ROW, "```python\nimport sys\nn = int(input())\nprint(2 * n)\nsys.exit(1)\n```", 0.0, 0.0,
            "protocol-v1 §10 LCB: stdin: exit 0 + exact match (right output, non-zero exit fails)"),
    Program(STDIN_ROW, f"```python\n{GOOD}```\nor\n```python\ndef broken(:\n```", 1.0, 1.0,
            EXT + " (a later block that does not parse is skipped)"),
    Program(STDIN_ROW, f"```python\n{GOOD}```\n```\nprint(0)\n```", 1.0, 1.0,
            EXT + " (a python-labelled block is preferred to a later unlabelled one)"),
    Program(STDIN_ROW, f"```py\n{GOOD}```\n```json\n[1, 2]\n```", 1.0, 1.0,
            "protocol-v1 §10 LCB: skipping blocks starting with { or ["),
    Program(STDIN_ROW, "print(2 * int(input()))", 0.0, 0.0, EXT + " (no fenced block: no program)"),
    Program(FN_ROW, "```python\nclass Solution:\n    def pair(self, a, b):\n        return (a, b)\n```", 1.0, 1.0,
            "protocol-v1 §10 LCB: functional: Solution().fn (a tuple result compares as a list)"),
    Program(FN_ROW, "```python\nclass Solution:\n    def pair(self, a, b):\n        return [b, a]\n```", 0.0, 0.0,
            "protocol-v1 §10 LCB: functional: the result must equal the expected output"),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", PROGRAMS, ids=[f"{i}" for i in range(len(PROGRAMS))])
def test_lcb_program_case(case: Program):
    output = AgentOutput(text=case.text)
    assert BENCH.score(case.row, output).value == case.protocol_value, case.cite
    assert BENCH.score_runner(case.row, output).value == case.runner_value, case.cite
