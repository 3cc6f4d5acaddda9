"""LCB tests as sandboxed cases (protocol: first 3 private tests; runners: all private tests).

stdin mode: exit 0 and output equal exactly, or line by line after stripping, with numeric tokens compared as
decimals. functional mode: Solution().<func_name>(*args) where each input line is one JSON argument; the
result must equal the JSON expected output (tuples read as lists).
"""

from __future__ import annotations

import json
import os
from decimal import Decimal, InvalidOperation
from typing import Any

from core.models import Row

from benchmarks.sandbox.codebench import first
from benchmarks.sandbox.limits import MIB, SandboxLimits, SandboxResult
from benchmarks.sandbox.programs import functional_program, parse_functional_stdout, stdin_program
from benchmarks.sandbox.suite import TestCase, excerpt

TEST_TIMEOUT_SECONDS = 6.0
DEFAULT_MEMORY_BYTES = 4096 * MIB


def default_limits() -> SandboxLimits:
    memory = int(os.environ.get("LCB_FUNCTIONAL_MEMORY_BYTES", DEFAULT_MEMORY_BYTES))
    return SandboxLimits(cpu_seconds=TEST_TIMEOUT_SECONDS, wall_seconds=TEST_TIMEOUT_SECONDS + 2.0,
                         memory_bytes=memory, output_bytes=4 * MIB)


def _decimal_tokens(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(tok) for tok in line.split()]
    except InvalidOperation:
        return None


def compare_stdout(expected: str, got: str) -> str | None:
    """None when equal under the LCB rule, else an "expected ..., got ..." description."""
    if got == expected:
        return None
    exp_lines = [line.strip() for line in expected.strip().split("\n")]
    got_lines = [line.strip() for line in got.strip().split("\n")]
    if len(exp_lines) != len(got_lines):
        return (f"expected {len(exp_lines)} output line(s), got {len(got_lines)}; expected {excerpt(expected)}, "
                f"got {excerpt(got)}")
    for n, (e, g) in enumerate(zip(exp_lines, got_lines), 1):
        if e == g:
            continue
        ed, gd = _decimal_tokens(e), _decimal_tokens(g)
        if ed is not None and gd is not None and len(ed) == len(gd) and all(a == b for a, b in zip(ed, gd)):
            continue
        return f"line {n}: expected {excerpt(e)}, got {excerpt(g)}"
    return None


def functional_arguments(test_input: str) -> list[Any]:
    return [json.loads(line) for line in test_input.split("\n") if line.strip()]


def _stdin_judge(expected: str):
    def judge(result: SandboxResult) -> str | None:
        return compare_stdout(expected, result.stdout)
    return judge


def _functional_judge(expected_text: str):
    expected = json.loads(expected_text)

    def judge(result: SandboxResult) -> str | None:
        found, value = parse_functional_stdout(result.stdout)
        if not found:
            return f"the function returned no result; expected {excerpt(expected_text)}"
        if value == expected:
            return None
        return f"expected {excerpt(json.dumps(expected))}, got {excerpt(json.dumps(value))}"
    return judge


def tests_of(row: Row) -> list[dict[str, Any]]:
    return list(row.gold.get("private_tests") or row.gold.get("public_tests") or [])


def build_cases(row: Row, code: str, max_tests: int | None) -> list[TestCase]:
    tests = first(tests_of(row), max_tests)
    if row.gold["mode"] == "functional":
        program = functional_program(code, row.gold["func_name"], prefer_method=True)
        return [TestCase(k, program, json.dumps(functional_arguments(t["input"])), _functional_judge(t["output"]))
                for k, t in enumerate(tests, 1)]
    program = stdin_program(code)
    return [TestCase(k, program, t["input"], _stdin_judge(t["output"])) for k, t in enumerate(tests, 1)]


# -- programs for the simulated endpoint ----------------------------------------------------------------------

def lookup_program(row: Row) -> str:
    """A program that answers every private test from a table: passes by construction (simulation only)."""
    tests = tests_of(row)
    if row.gold["mode"] == "functional":
        table = {json.dumps(functional_arguments(t["input"])): json.loads(t["output"]) for t in tests}
        return ("import json\n"
                f"_TABLE = json.loads({json.dumps(table)!r})\n"
                "class Solution:\n"
                "    def __getattr__(self, name):\n"
                "        return lambda *args: _TABLE[json.dumps(list(args))]\n")
    table = {t["input"].strip(): t["output"] for t in tests}
    return ("import sys, json\n"
            f"_TABLE = json.loads({json.dumps(table)!r})\n"
            "print(_TABLE.get(sys.stdin.read().strip(), ''), end='')\n")


def wrong_program(row: Row) -> str:
    if row.gold["mode"] == "functional":
        return "class Solution:\n    def __getattr__(self, name):\n        return lambda *args: '__wrong__'\n"
    return "import sys\nsys.stdin.read()\nprint('__wrong__')\n"


def crashing_program(row: Row) -> str:
    if row.gold["mode"] == "functional":
        return ("class Solution:\n    def __getattr__(self, name):\n"
                "        def run(*args):\n            return [][len(args)]\n        return run\n")
    return "import sys\ndata = sys.stdin.read().split()\nprint(data[10**9])\n"
