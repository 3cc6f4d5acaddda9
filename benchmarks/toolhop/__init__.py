"""ToolHop (bytedance-research/ToolHop) under mas-promptbench-v1."""

from benchmarks.toolhop.benchmark import BENCHMARK, MAX_TURNS, ToolHopBenchmark
from benchmarks.toolhop.executor import DatasetExecDisabled, run_tool, run_tool_sync
from benchmarks.toolhop.scoring import extract_final, matches, score_answer

__all__ = ["BENCHMARK", "DatasetExecDisabled", "MAX_TURNS", "ToolHopBenchmark", "extract_final",
           "matches", "run_tool", "run_tool_sync", "score_answer"]
