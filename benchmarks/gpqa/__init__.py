"""GPQA-Diamond (Idavidrein/gpqa) under mas-promptbench-v1."""

from benchmarks.gpqa.benchmark import BENCHMARK, GpqaBenchmark, call_tool, tools_for
from benchmarks.gpqa.scoring import extract_letter, score_letter

__all__ = ["BENCHMARK", "GpqaBenchmark", "call_tool", "extract_letter", "score_letter", "tools_for"]
