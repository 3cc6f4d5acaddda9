"""HotpotQA (hotpot_qa distractor, validation) under mas-promptbench-v1."""

from benchmarks.hotpotqa.benchmark import BENCHMARK, HotpotQABenchmark
from benchmarks.hotpotqa.scoring import exact_match, extract_answer, f1, normalize_answer, score_answer, score_f1

__all__ = ["BENCHMARK", "HotpotQABenchmark", "exact_match", "extract_answer", "f1",
           "normalize_answer", "score_answer", "score_f1"]
