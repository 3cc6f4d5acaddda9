"""API-Bank (AlibabaResearch/DAMO-ConvAI api-bank, levels 1-3) under mas-promptbench-v1."""

from benchmarks.apibank.benchmark import BENCHMARK, ApiBankBenchmark
from benchmarks.apibank.calls import extract_call, format_call, parse_call

__all__ = ["BENCHMARK", "ApiBankBenchmark", "extract_call", "format_call", "parse_call"]
