"""MATH (qwedsacf/competition_math, Precalculus Level 5) under mas-promptbench-v1.

Imported only as `benchmarks.math`; modules inside use absolute imports, so the stdlib `math` is never shadowed.
"""

from benchmarks.math.benchmark import BENCHMARK, MathBenchmark, call_tool, score_text, tools_for
from benchmarks.math.equivalence import is_equiv, last_boxed, strip_string

__all__ = ["BENCHMARK", "MathBenchmark", "call_tool", "is_equiv", "last_boxed", "score_text", "strip_string",
           "tools_for"]
