"""Dataset options from the command line, applied to a benchmark before anything runs.

Every benchmark declares `configure(options) -> Benchmark` (a configured copy), `check_ready()` (raises
UsageError when it cannot run as configured, e.g. HotpotQA without a Wikipedia source) and `tool_environment()`
(what its tools read, recorded in the job identity and the evaluation condition; None when nothing).
Options a dataset does not take are refused, so a flag is never silently ignored.
"""

from __future__ import annotations

from typing import Any

from core.benchmark import Benchmark
from core.errors import UsageError

# option name -> (flag, datasets that take it)
DATASET_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "wiki_dir": ("--wiki-dir", ("hotpotqa",)),
    "wiki_live": ("--wiki-live", ("hotpotqa",)),
    "wiki_pooled": ("--wiki-pooled", ("hotpotqa",)),
    "swe_repos": ("--swe-repos", ("swe",)),
}


def dataset_options(args: Any) -> dict[str, Any]:
    """The dataset options present in parsed arguments (unset flags left out)."""
    return {name: getattr(args, name) for name in DATASET_OPTIONS if getattr(args, name, None)}


def configure_benchmark(bench: Benchmark, options: dict[str, Any], data_dir: str | None) -> Benchmark:
    for name in options:
        flag, datasets = DATASET_OPTIONS[name]
        if bench.name not in datasets:
            raise UsageError(f"{flag} applies only to task={' or '.join(datasets)}, not task={bench.name}")
    bench = bench.configure({**options, "data_dir": data_dir})
    bench.check_ready()
    problem = bench.scorer_problem()  # e.g. API-Bank without its checkout: refused up front, not per rollout
    if problem:
        raise UsageError(f"task={bench.name}: the protocol scorer cannot run here: {problem}")
    return bench


def tool_environment(bench: Benchmark) -> dict[str, Any] | None:
    described = bench.tool_environment()
    return None if described is None else dict(described)
