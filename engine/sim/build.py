"""Build the simulated endpoint's policy from registered benchmarks (all split rows, gold included)."""

from __future__ import annotations

from typing import Sequence

from core.benchmark import Benchmark
from core.errors import UsageError
from core.models import Row
from core.simulation import SimulatedBenchmark
from engine.sim.policy import DEFAULT_REFLECTION_MODEL, Policy


def all_split_ids(benchmark: Benchmark) -> list[str]:
    """train + validation + test + eval_ids, de-duplicated, in that order."""
    splits = benchmark.splits()
    return list(dict.fromkeys([*splits.train, *splits.validation, *splits.test, *splits.eval_ids]))


def build_policy(tasks: Sequence[str], data_dir: str | None = None,
                 reflection_model: str = DEFAULT_REFLECTION_MODEL) -> Policy:
    """A Policy over every split row of each named benchmark.

    Imports `benchmarks.registry` lazily. Raises core.errors.UsageError for an unknown task name and lets the
    benchmark's core.errors.DataError (missing files or IDs) propagate.
    """
    if not tasks:
        raise UsageError("at least one task is needed to build the simulated policy")
    from benchmarks.registry import get_benchmark  # lazy: the data layer is optional for most engine paths

    datasets: dict[str, tuple[SimulatedBenchmark, list[Row]]] = {}
    for name in tasks:
        try:
            benchmark = get_benchmark(name)
        except KeyError as exc:
            raise UsageError(f"unknown task {name!r}") from exc
        if not isinstance(benchmark, SimulatedBenchmark):
            raise UsageError(f"task {name!r} declares no simulation hooks (failure_modes, simulate)")
        rows = benchmark.load_rows(all_split_ids(benchmark), data_dir)
        datasets[name] = (benchmark, rows)
    return Policy(datasets, reflection_model=reflection_model)
