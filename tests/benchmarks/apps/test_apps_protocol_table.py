"""APPS scorer edge cases, one row per rule of protocol-v1 §5.7 apps ("passes first 3 tests (loader keeps interview
problems only)"; runners: first 20 tests) and §10 APPS ("4 s per test; stdin cascade (stripped equal -> line-wise ->
numpy allclose rtol 1e-5 atol 1e-6); call-based cascade (equal -> numeric close -> set-equal -> rounded-3 set)").

The protocol states its own cascade (its tolerances are not those of the APPS repository's testing_util), so the
expected verdicts are written out; the sandboxed cases run real subprocesses.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from benchmarks.apps import APPSBenchmark
from benchmarks.apps.scorer import call_matches, compare_stdout
from benchmarks.sandbox import SandboxLimits
from core.models import AgentOutput, Row

STDIN = "protocol-v1 §10 APPS: stdin cascade (stripped equal -> line-wise -> numpy allclose rtol 1e-5 atol 1e-6)"
CALL = "protocol-v1 §10 APPS: call-based cascade (equal -> numeric close -> set-equal -> rounded-3 set)"


class Compare(NamedTuple):
    expected: str
    got: str
    accepted: bool
    cite: str


STDOUT = [
    Compare("3\n", "  3  ", True, STDIN + ": stripped equal"),
    Compare("a\nb\n", "a \n\n b", True, STDIN + ": line-wise (lines stripped, blank lines dropped)"),
    Compare("1.0 2.0", "1.000001 2", True, STDIN + ": allclose within rtol 1e-5"),
    Compare("0", "0.0000009", True, STDIN + ": allclose within atol 1e-6"),
    Compare("0", "0.000002", False, STDIN + ": outside atol 1e-6"),
    Compare("100000", "100002", False, STDIN + ": outside rtol 1e-5"),
    Compare("1 2", "1 2 3", False, STDIN + ": numeric token counts differ"),
    Compare("YES", "yes", False, STDIN + ": no case folding"),
    Compare("a b", "b a", False, STDIN + ": order matters on stdin"),
]


class Call(NamedTuple):
    expected: Any
    got: Any
    accepted: bool
    cite: str


CALLS = [
    Call([5], 5, True, CALL + ": equal (a one-element expected list also stands for its element)"),
    Call(0.1, 0.1000001, True, CALL + ": numeric close"),
    Call([1, 2, 3], [3, 1, 2], True, CALL + ": set-equal"),
    Call([0.3333, 1.5], [1.5, 0.33329], True, CALL + ": rounded-3 set"),
    Call([1, 2], [1, 2, 2, 3], False, CALL + ": different sets"),
    Call("abc", "abd", False, CALL + ": unequal strings"),
    Call(True, 1, True, CALL + ": equal (Python equality: True == 1)"),
]


def test_tables_are_large_enough_and_cited():
    assert len(STDOUT) + len(CALLS) + len(PROGRAMS) >= 15
    assert all(c.cite.startswith("protocol-v1 §") for c in [*STDOUT, *CALLS, *PROGRAMS])


@pytest.mark.parametrize("case", STDOUT, ids=[f"{i}" for i in range(len(STDOUT))])
def test_apps_stdout_cascade(case: Compare):
    assert (compare_stdout(case.expected, case.got) is None) == case.accepted, case.cite


@pytest.mark.parametrize("case", CALLS, ids=[f"{i}" for i in range(len(CALLS))])
def test_apps_call_cascade(case: Call):
    assert call_matches(case.expected, case.got) == case.accepted, case.cite


BENCH = APPSBenchmark(limits=SandboxLimits(cpu_seconds=2, wall_seconds=4, memory_bytes=1024 ** 3))
TESTS = [{"input": f"{n}\n", "output": f"{n * n}\n"} for n in range(1, 23)]
STDIN_ROW = Row(id="0", dataset="apps", task={"mode": "stdin", "question": "square", "starter_code": ""},
                gold={"mode": "stdin", "fn_name": None, "tests": TESTS, "solutions": []})
CALL_ROW = Row(id="1", dataset="apps", task={"mode": "call", "question": "add", "starter_code": ""},
               gold={"mode": "call", "fn_name": "add", "solutions": [],
                     "tests": [{"input": [1, 2], "output": [3]}, {"input": [2, 2], "output": [4]}]})
M57 = "protocol-v1 §5.7 apps: passes first 3 tests"


class Program(NamedTuple):
    row: Row
    text: str
    protocol_value: float
    runner_value: float  # the runners' first 20 tests
    cite: str


PROGRAMS = [
    Program(STDIN_ROW, "```python\nn = int(input())\nprint(n * n)\n```", 1.0, 1.0, M57),
    Program(STDIN_ROW, "```python\nn = int(input())\nprint(n * n if n != 5 else 0)\n```", 1.0, 0.0,
            M57 + " (test 5 fails: only the runners' rule sees it)"),
    Program(STDIN_ROW, "```python\nn = int(input())\nprint(n * n if n < 21 else 0)\n```", 1.0, 1.0,
            "protocol-v1 §10 APPS: runner keeps first 20 tests (test 21 is never run)"),
    Program(STDIN_ROW, "```python\nn = int(input())\nprint(n * n if n != 2 else 0)\n```", 0.0, 0.0, M57),
    Program(CALL_ROW, "```python\ndef add(a, b):\n    return a + b\n```", 1.0, 1.0,
            CALL + " (call-based: the function is called with the test's arguments)"),
    Program(CALL_ROW, "```python\ndef add(a, b):\n    return str(a + b)\n```", 0.0, 0.0, CALL + " ('3' is not 3)"),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", PROGRAMS, ids=[f"{i}" for i in range(len(PROGRAMS))])
def test_apps_program_case(case: Program):
    output = AgentOutput(text=case.text)
    assert BENCH.score(case.row, output).value == case.protocol_value, case.cite
    assert BENCH.score_runner(case.row, output).value == case.runner_value, case.cite
