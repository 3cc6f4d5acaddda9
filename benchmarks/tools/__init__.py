"""Tools offered to agents: `calculator` (GPQA, MATH) and `python_exec` (LCB, APPS)."""

from benchmarks.tools.calculator import CALCULATOR_TOOL, calculator, calculator_async, evaluate
from benchmarks.tools.python_exec import PYTHON_EXEC_TOOL, format_result, python_exec, python_exec_async

__all__ = ["CALCULATOR_TOOL", "PYTHON_EXEC_TOOL", "calculator", "calculator_async", "evaluate", "format_result",
           "python_exec", "python_exec_async"]
