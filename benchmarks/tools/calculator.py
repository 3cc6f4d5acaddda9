"""`calculator(expression)`: safe numeric expression evaluation by walking the `ast` (never eval/exec).

Allowed: int/float literals, + - * / ** % //, unary + -, parentheses, the names pi, e, tau, inf-free math
functions sqrt log log10 log2 exp sin cos tan asin acos atan sinh cosh tanh abs round floor ceil factorial
(and `^` read as power, as people type it). Sizes are bounded so no expression can take long or eat memory.
Anything else yields an error string starting with "Error:".
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable

MAX_EXPRESSION_CHARS = 500
MAX_EXPONENT = 10_000
MAX_FACTORIAL = 1_000
MAX_INT_DIGITS = 4_000
MAX_NODES = 200

CALCULATOR_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": ("Evaluate a numeric expression, e.g. '2*sqrt(3) + log(10)/pi'. Supports + - * / ** % //, "
                        "parentheses, pi, e and sqrt, log, log10, exp, sin, cos, tan, asin, acos, atan, abs, round, "
                        "factorial."),
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "the numeric expression"}},
            "required": ["expression"],
            "additionalProperties": False,
        },
    },
}


class CalculatorError(ValueError):
    pass


def _factorial(x: float) -> int:
    if isinstance(x, float):
        if not x.is_integer():
            raise CalculatorError("factorial needs a non-negative integer")
        x = int(x)
    if x < 0 or x > MAX_FACTORIAL:
        raise CalculatorError(f"factorial argument must be between 0 and {MAX_FACTORIAL}")
    return math.factorial(int(x))


def _log(x: float, base: float | None = None) -> float:
    return math.log(x) if base is None else math.log(x, base)


def _round(x: float, digits: int | None = None) -> float:
    if digits is not None and (not isinstance(digits, int) or abs(digits) > 100):
        raise CalculatorError("round digits must be an integer between -100 and 100")
    return round(x) if digits is None else round(x, digits)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "log": _log, "ln": math.log, "log10": math.log10, "log2": math.log2, "exp": math.exp,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh, "abs": abs, "round": _round,
    "floor": math.floor, "ceil": math.ceil, "factorial": _factorial, "degrees": math.degrees,
    "radians": math.radians, "hypot": math.hypot,
}
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _pow(a: Any, b: Any) -> Any:
    if isinstance(b, (int, float)) and abs(b) > MAX_EXPONENT:
        raise CalculatorError(f"exponent too large (|exponent| <= {MAX_EXPONENT})")
    if isinstance(a, int) and isinstance(b, int) and b > 0 and a not in (0, 1, -1):
        if b * math.log10(abs(a)) > MAX_INT_DIGITS:
            raise CalculatorError(f"result too large (more than {MAX_INT_DIGITS} digits)")
    return operator.pow(a, b)


def _mul(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and a and b:
        if math.log10(abs(a)) + math.log10(abs(b)) > MAX_INT_DIGITS:
            raise CalculatorError(f"result too large (more than {MAX_INT_DIGITS} digits)")
    return operator.mul(a, b)


BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: _mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _pow, ast.BitXor: _pow,
}
UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def evaluate(expression: str) -> int | float:
    """The value of `expression`; raises CalculatorError for anything outside the grammar or bounds."""
    if not isinstance(expression, str) or not expression.strip():
        raise CalculatorError("empty expression")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not a valid expression ({exc.msg})") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise CalculatorError("expression too complex")
    return _eval(tree.body)


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise CalculatorError(f"unsupported literal {node.value!r}")
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        return BINARY[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        return UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise CalculatorError(f"unknown name {node.id!r}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise CalculatorError(f"unknown function {name!r}")
        if node.keywords or len(node.args) > 2:
            raise CalculatorError(f"{node.func.id}() takes one or two positional arguments")
        args = [_eval(arg) for arg in node.args]
        for arg in args:
            if isinstance(arg, int) and arg.bit_length() > MAX_INT_DIGITS * 4:
                raise CalculatorError("argument too large")
        return FUNCTIONS[node.func.id](*args)
    raise CalculatorError(f"unsupported syntax: {type(node).__name__}")


def calculator(expression: str) -> str:
    """Tool entry point: the value as text, or a one-line "Error: ..." string (never raises)."""
    try:
        value = evaluate(expression)
    except CalculatorError as exc:
        return f"Error: {exc}"
    except ZeroDivisionError:
        return "Error: division by zero"
    except OverflowError:
        return "Error: numeric overflow"
    except (ValueError, TypeError) as exc:
        return f"Error: {exc}"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "Error: result is not a finite number"
        return repr(value)
    return str(value)


async def calculator_async(expression: str) -> str:
    """Async implementation (the evaluation is bounded and CPU-light, so it runs inline)."""
    return calculator(expression)
