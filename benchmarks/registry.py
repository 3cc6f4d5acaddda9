"""Find a dataset package by name: `benchmarks.<name>` exposes `BENCHMARK` (a core.benchmark.Benchmark).

The names are the dataset table's (core/datasets.py `DATASET_TABLE`, a dataset's one registration: its data
directory and its command-line options too). Packages are imported lazily, so asking for one dataset never imports
the others (or their optional dependencies).
"""

from __future__ import annotations

import importlib

from core.benchmark import Benchmark
from core.datasets import dataset_names
from core.errors import UsageError

KNOWN_BENCHMARKS = dataset_names()  # the names registered at import (tests parametrize over them)


def get_benchmark(name: str) -> Benchmark:
    """The `BENCHMARK` of `benchmarks.<name>`; UsageError for an unknown or not yet implemented dataset."""
    known = dataset_names()
    if name not in known:
        raise UsageError(f"unknown benchmark {name!r}; known: {', '.join(known)}")
    module_name = f"{__package__ or 'benchmarks'}.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise UsageError(f"benchmark {name!r} is not implemented yet (no package {module_name})") from exc
    benchmark = getattr(module, "BENCHMARK", None)
    if benchmark is None:
        raise UsageError(f"benchmark {name!r} is not implemented yet ({module_name} has no BENCHMARK)")
    if not isinstance(benchmark, Benchmark):
        raise UsageError(f"{module_name}.BENCHMARK does not satisfy the Benchmark protocol")
    return benchmark
