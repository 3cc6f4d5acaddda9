"""SWE-bench Verified (protocol-v1 section 10): loader, structural patch scorer, harness rule, contracts,
simulation. `BENCHMARK` implements core.benchmark.Benchmark."""

from benchmarks.swe.benchmark import BENCHMARK, SWEBenchmark
from benchmarks.swe.harness import HarnessUnavailable
from benchmarks.swe.loader import load_rows
from benchmarks.swe.patch import check_patch, extract_patch

__all__ = ["BENCHMARK", "HarnessUnavailable", "SWEBenchmark", "check_patch", "extract_patch", "load_rows"]
