"""APPS (`codeparrot/apps`, interview problems; protocol-v1 section 10): loader, sandboxed scorer, contracts,
simulation. `BENCHMARK` implements core.benchmark.Benchmark."""

from benchmarks.apps.benchmark import APPSBenchmark, BENCHMARK
from benchmarks.apps.loader import load_rows

__all__ = ["APPSBenchmark", "BENCHMARK", "load_rows"]
