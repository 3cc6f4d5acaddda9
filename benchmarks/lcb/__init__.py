"""LiveCodeBench (`livecodebench/code_generation_lite`, protocol-v1 section 10): loader, sandboxed scorer,
contracts, simulation. `BENCHMARK` implements core.benchmark.Benchmark."""

from benchmarks.lcb.benchmark import BENCHMARK, LCBBenchmark
from benchmarks.lcb.loader import decode_test_cases, load_rows

__all__ = ["BENCHMARK", "LCBBenchmark", "decode_test_cases", "load_rows"]
