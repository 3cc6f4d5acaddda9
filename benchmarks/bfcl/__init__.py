"""BFCL (Berkeley Function-Calling Leaderboard), AST categories simple / multiple / parallel / parallel_multiple.

Data and the official AST checker come from the `bfcl-eval` wheel, installed without its heavy dependencies:
`pip install --no-deps bfcl-eval==2026.3.23` (see benchmarks.bfcl.checker). Importing this package does not
import bfcl_eval; loading rows or scoring does.

Modules: data (loader and v3 -> v4 ID mapping), tools (OpenAI tool schemas, text listing), calls (answer
extraction, vote keys), checker (the official checker, slim import), scoring (0/1 + feedback, failure modes),
simulate (simulated replies), benchmark (the Benchmark object).
"""

from benchmarks.bfcl.benchmark import BfclBenchmark
from benchmarks.bfcl.calls import extract_calls

BENCHMARK = BfclBenchmark()

__all__ = ["BENCHMARK", "BfclBenchmark", "extract_calls"]
