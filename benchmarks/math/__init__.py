"""MATH (qwedsacf/competition_math, Precalculus Level 5) under mas-promptbench-v1.

Imported only as `benchmarks.math`; modules inside use absolute imports, so the stdlib `math` is never shadowed.
"""

from benchmarks.math.benchmark import BENCHMARK, MathBenchmark, score_text
from benchmarks.math.equivalence import is_equiv, last_boxed, strip_string

__all__ = ["BENCHMARK", "MathBenchmark", "is_equiv", "last_boxed", "score_text", "strip_string"]
