import math

import anyio
import pytest

from benchmarks.tools import CALCULATOR_TOOL, calculator, calculator_async, evaluate


@pytest.mark.parametrize("expr, value", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 // 2", 3), ("7 % 4", 3), ("2 ** 10", 1024), ("2 ^ 3", 8),
    ("-3 + +4", 1), ("sqrt(16)", 4.0), ("log(e)", 1.0), ("log10(1000)", 3.0), ("exp(0)", 1.0),
    ("sin(0) + cos(0)", 1.0), ("abs(-2.5)", 2.5), ("round(2.567, 2)", 2.57), ("factorial(5)", 120),
    ("atan(1) * 4", math.pi), ("log(8, 2)", 3.0),
])
def test_values(expr, value):
    assert evaluate(expr) == pytest.approx(value)


def test_tool_output_is_text():
    assert calculator("1/4") == "0.25"
    assert calculator("2**100") == str(2 ** 100)
    assert anyio.run(calculator_async, "3*3") == "9"


@pytest.mark.parametrize("expr, needle", [
    ("__import__('os').system('id')", "unknown function"),
    ("open('/etc/passwd')", "unknown function"),
    ("x + 1", "unknown name"),
    ("(1).__class__", "unsupported syntax"),
    ("[1, 2]", "unsupported syntax"),
    ("'a' * 3", "unsupported literal"),
    ("lambda: 1", "unsupported syntax"),
    ("9 ** 9 ** 9", "too large"),
    ("2 ** 100000", "exponent too large"),
    ("factorial(100000)", "factorial argument"),
    ("1 / 0", "division by zero"),
    ("sqrt(-1)", "math domain error"),
    ("exp(1000)", "overflow"),
    ("1 +", "not a valid expression"),
    ("", "empty expression"),
    ("1+" * 400 + "1", "longer than"),
    ("sqrt(x=4)", "positional"),
])
def test_errors_are_clear_strings(expr, needle):
    out = calculator(expr)
    assert out.startswith("Error:") and needle in out, out


def test_schema_shape():
    fn = CALCULATOR_TOOL["function"]
    assert CALCULATOR_TOOL["type"] == "function" and fn["name"] == "calculator"
    assert fn["parameters"]["required"] == ["expression"]
