"""The `calculator` tool as GPQA and MATH offer it: a thin adapter over the one safe evaluator in
benchmarks.tools.calculator (an AST walker, never eval), with this dataset family's output conventions:
integral floats print as integers and errors start with "error:"."""

from __future__ import annotations

from typing import Any

from benchmarks.tools.calculator import CALCULATOR_TOOL, evaluate

CALCULATOR_SCHEMA: dict[str, Any] = CALCULATOR_TOOL


def calculate(expression: str) -> str:
    """Tool text: the result, or 'error: ...' (never raises for bad input)."""
    try:
        value = evaluate(expression)
    except (ArithmeticError, ValueError, TypeError) as exc:  # CalculatorError is a ValueError
        return f"error: {exc}"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return "error: result is not a finite number"
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    return str(value)


async def call_calculator(name: str, arguments: dict[str, Any]) -> str:
    """Execute a `calculator` tool call; unknown tool names and bad arguments come back as error text."""
    if name != "calculator":
        return f"error: unknown tool {name!r}; the only tool is 'calculator'"
    expression = arguments.get("expression") if isinstance(arguments, dict) else None
    if not isinstance(expression, str):
        return "error: calculator needs one string argument 'expression'"
    return calculate(expression)
