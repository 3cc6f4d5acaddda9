"""APPS tests as sandboxed cases (protocol: first 3 tests; runners: first 20), 4 s per test.

stdin cascade: stripped equal -> line-wise (stripped, blank lines dropped) -> numpy allclose (rtol 1e-5,
atol 1e-6) over whitespace tokens. call-based cascade (each against the expected value and, when that is a
one-element list, its element): equal -> numeric close -> set-equal -> rounded-to-3 set-equal.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from core.models import Row

from benchmarks.sandbox.codebench import first
from benchmarks.sandbox.limits import MIB, SandboxLimits, SandboxResult
from benchmarks.sandbox.programs import functional_program, parse_functional_stdout, stdin_program
from benchmarks.sandbox.suite import TestCase, excerpt

TEST_TIMEOUT_SECONDS = 4.0
RUNNER_TESTS = 20


def default_limits() -> SandboxLimits:
    return SandboxLimits(cpu_seconds=TEST_TIMEOUT_SECONDS, wall_seconds=TEST_TIMEOUT_SECONDS + 2.0,
                         memory_bytes=2048 * MIB, output_bytes=4 * MIB)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().splitlines() if line.strip()]


def _floats(text: str) -> np.ndarray | None:
    try:
        values = np.array([float(tok) for tok in text.split()], dtype=float)
    except ValueError:
        return None
    return values


def compare_stdout(expected: str, got: str) -> str | None:
    if got.strip() == expected.strip():
        return None
    if _lines(got) == _lines(expected):
        return None
    e, g = _floats(expected), _floats(got)
    if e is not None and g is not None and e.shape == g.shape and e.size and np.allclose(g, e, rtol=1e-5, atol=1e-6):
        return None
    return f"expected {excerpt(expected)}, got {excerpt(got)}"


def _numbers(value: Any) -> list[float] | None:
    items = value if isinstance(value, list) else [value]
    out: list[float] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            return None
        out.append(float(item))
    return out


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def _rounded(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value):
        return round(value, 3)
    if isinstance(value, list):
        return tuple(_rounded(v) for v in value)
    return _hashable(value)


def call_matches(expected: Any, got: Any) -> bool:
    candidates = [expected]
    if isinstance(expected, list) and len(expected) == 1:
        candidates.append(expected[0])
    for exp in candidates:
        if got == exp:
            return True
    for exp in candidates:
        e, g = _numbers(exp), _numbers(got)
        if e is not None and g is not None and len(e) == len(g) and e and np.allclose(g, e, rtol=1e-5, atol=1e-6):
            return True
    for exp in candidates:
        if isinstance(exp, list) and isinstance(got, list):
            try:
                if set(_hashable(v) for v in exp) == set(_hashable(v) for v in got):
                    return True
                if set(_rounded(v) for v in exp) == set(_rounded(v) for v in got):
                    return True
            except TypeError:
                continue
    return False


def _stdin_judge(expected: str):
    def judge(result: SandboxResult) -> str | None:
        return compare_stdout(expected, result.stdout)
    return judge


def _call_judge(expected: Any):
    def judge(result: SandboxResult) -> str | None:
        found, value = parse_functional_stdout(result.stdout)
        if not found:
            return f"the function returned no result; expected {excerpt(json.dumps(expected))}"
        if call_matches(expected, value):
            return None
        return f"expected {excerpt(json.dumps(expected))}, got {excerpt(json.dumps(value))}"
    return judge


def build_cases(row: Row, code: str, max_tests: int | None) -> list[TestCase]:
    tests = first(row.gold["tests"], max_tests)
    if row.gold["mode"] == "call":
        program = functional_program(code, row.gold["fn_name"], prefer_method=False)
        return [TestCase(k, program, json.dumps(t["input"]), _call_judge(t["output"])) for k, t in enumerate(tests, 1)]
    program = stdin_program(code)
    return [TestCase(k, program, t["input"], _stdin_judge(t["output"])) for k, t in enumerate(tests, 1)]


# -- programs for the simulated endpoint ----------------------------------------------------------------------

def lookup_program(row: Row) -> str:
    tests = row.gold["tests"]
    fn = row.gold["fn_name"]
    if row.gold["mode"] == "call":
        table = {json.dumps(t["input"]): t["output"] for t in tests}
        return ("import json\n"
                f"_TABLE = json.loads({json.dumps(table)!r})\n"
                f"def {fn}(*args):\n"
                "    return _TABLE[json.dumps(list(args))]\n")
    table = {t["input"].strip(): t["output"] for t in tests}
    return ("import sys, json\n"
            f"_TABLE = json.loads({json.dumps(table)!r})\n"
            "print(_TABLE.get(sys.stdin.read().strip(), ''), end='')\n")


def wrong_program(row: Row) -> str:
    if row.gold["mode"] == "call":
        return f"def {row.gold['fn_name']}(*args):\n    return '__wrong__'\n"
    return "import sys\nsys.stdin.read()\nprint('__wrong__')\n"


def crashing_program(row: Row) -> str:
    if row.gold["mode"] == "call":
        return f"def {row.gold['fn_name']}(*args):\n    return [][len(args)]\n"
    return "import sys\ndata = sys.stdin.read().split()\nprint(data[10**9])\n"
