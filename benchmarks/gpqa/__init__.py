"""GPQA-Diamond (Idavidrein/gpqa) under mas-promptbench-v1."""

from benchmarks.gpqa.benchmark import BENCHMARK, GpqaBenchmark
from benchmarks.gpqa.scoring import extract_letter, score_letter

__all__ = ["BENCHMARK", "GpqaBenchmark", "extract_letter", "score_letter"]
