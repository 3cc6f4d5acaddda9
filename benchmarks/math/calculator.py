"""A safe numeric calculator for the `calculator` tool (GPQA, MATH): an AST walker, never eval.

Accepts numbers, + - * / // % **, unary signs, parentheses, the constants pi, e, tau, inf and calls to
sqrt, cbrt, log (natural, or log(x, base)), log10, log2, exp, sin, cos, tan, asin, acos, atan, atan2, sinh,
cosh, tanh, degrees, radians, abs, round, floor, ceil, factorial, comb, perm, gcd, lcm, hypot, min, max.
`^` is read as power (the way people type it). Sizes are bounded so one expression cannot hang the worker.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable

CALCULATOR_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": (
            "Evaluate a numeric Python-style expression and return the result. Supports + - * / // % ** "
            "(or ^), parentheses, pi, e, sqrt, log, log10, log2, exp, sin, cos, tan, asin, acos, atan, atan2, "
            "sinh, cosh, tanh, degrees, radians, abs, round, floor, ceil, factorial, comb, perm, gcd, hypot."
        ),
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. sqrt(2) * sin(pi / 4)"}},
            "required": ["expression"],
        },
    },
}

MAX_EXPRESSION_CHARS = 2_000
MAX_EXPONENT = 10_000
MAX_FACTORIAL = 5_000
MAX_INT_BITS = 100_000


class CalculatorError(ValueError):
    """The expression is not allowed or cannot be evaluated."""


def _log(x: float, base: float | None = None) -> float:
    return math.log(x) if base is None else math.log(x, base)


def _factorial(n: Any) -> int:
    if not isinstance(n, int) or isinstance(n, bool):
        if isinstance(n, float) and n.is_integer():
            n = int(n)
        else:
            raise CalculatorError("factorial needs a non-negative integer")
    if n > MAX_FACTORIAL:
        raise CalculatorError(f"factorial argument above {MAX_FACTORIAL}")
    return math.factorial(n)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "cbrt": lambda x: math.copysign(abs(x) ** (1 / 3), x), "log": _log, "ln": math.log,
    "log10": math.log10, "log2": math.log2, "exp": math.exp, "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "asin": math.asin, "acos": math.acos, "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh,
    "cosh": math.cosh, "tanh": math.tanh, "degrees": math.degrees, "radians": math.radians, "abs": abs,
    "round": round, "floor": math.floor, "ceil": math.ceil, "factorial": _factorial, "comb": math.comb,
    "perm": math.perm, "gcd": math.gcd, "lcm": math.lcm, "hypot": math.hypot, "min": min, "max": max,
}
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitXor: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _check_size(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise CalculatorError("integer result too large")
    return value


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise CalculatorError(f"unknown name {node.id!r}")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, (ast.Pow, ast.BitXor)) and isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
            raise CalculatorError(f"exponent above {MAX_EXPONENT}")
        return _check_size(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fn = FUNCTIONS.get(node.func.id)
        if fn is None:
            raise CalculatorError(f"unknown function {node.func.id!r}")
        return _check_size(fn(*[_eval(arg) for arg in node.args]))
    raise CalculatorError(f"unsupported syntax: {type(node).__name__}")


def evaluate(expression: str) -> int | float | complex:
    """The value of `expression`; CalculatorError when it is not allowed or fails."""
    if not isinstance(expression, str) or not expression.strip():
        raise CalculatorError("empty expression")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"syntax error: {exc.msg}") from exc
    try:
        return _eval(tree)
    except CalculatorError:
        raise
    except (ArithmeticError, ValueError, TypeError, OverflowError) as exc:
        raise CalculatorError(f"{type(exc).__name__}: {exc}") from exc


def calculate(expression: str) -> str:
    """Tool text: the result, or 'error: ...' (never raises for bad input)."""
    try:
        value = evaluate(expression)
    except CalculatorError as exc:
        return f"error: {exc}"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


async def call_calculator(name: str, arguments: dict[str, Any]) -> str:
    """Execute a `calculator` tool call; unknown tool names and bad arguments come back as error text."""
    if name != "calculator":
        return f"error: unknown tool {name!r}; the only tool is 'calculator'"
    expression = arguments.get("expression") if isinstance(arguments, dict) else None
    if not isinstance(expression, str):
        return "error: calculator needs one string argument 'expression'"
    return calculate(expression)
