"""Dataset options from the command line, applied to a benchmark before anything runs.

A benchmark may expose `configure(options) -> Benchmark` (a configured copy), `check_ready()` (raises UsageError
when it cannot run as configured, e.g. HotpotQA without a Wikipedia source) and `tool_environment()` (what its
tools read, recorded in the job identity and the evaluation condition). Options a dataset does not take are
refused, so a flag is never silently ignored.
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
    configure = getattr(bench, "configure", None)
    if configure is not None:
        bench = configure({**options, "data_dir": data_dir})
    check = getattr(bench, "check_ready", None)
    if check is not None:
        check()
    return bench


def tool_environment(bench: Benchmark) -> dict[str, Any] | None:
    describe = getattr(bench, "tool_environment", None)
    return None if describe is None else dict(describe())
