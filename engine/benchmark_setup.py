"""Dataset options from the command line, applied to a benchmark before anything runs.

Every benchmark declares `configure(options) -> Benchmark` (a configured copy), `check_ready()` (raises
UsageError when it cannot run as configured, e.g. HotpotQA without a Wikipedia source) and `tool_environment()`
(what its tools read, recorded in the job identity and the evaluation condition; None when nothing).
Options a dataset does not take are refused, so a flag is never silently ignored. Which dataset takes which option
is its entry in the dataset table (core/datasets.py); `add_dataset_options` puts them on a command's parser.
"""

from __future__ import annotations

import argparse
from typing import Any

from core.benchmark import Benchmark
from core.datasets import DATASET_TABLE
from core.datasets import dataset_options as registered_options
from core.errors import UsageError


def add_dataset_options(p: argparse.ArgumentParser) -> None:
    """Every registered dataset's options: in the dataset's own --help group when it names one."""
    for spec in DATASET_TABLE.values():
        target: Any = p.add_argument_group(spec.options_title) if spec.options_title and spec.options else p
        for option in spec.options:
            if option.metavar is None:
                target.add_argument(option.flag, dest=option.dest, action="store_true", help=option.help)
            else:
                target.add_argument(option.flag, dest=option.dest, metavar=option.metavar, help=option.help)


def dataset_options(args: Any) -> dict[str, Any]:
    """The dataset options present in parsed arguments (unset flags left out)."""
    return {name: getattr(args, name) for name in registered_options() if getattr(args, name, None)}


def configure_benchmark(bench: Benchmark, options: dict[str, Any], data_dir: str | None, *,
                        run: bool = True) -> Benchmark:
    """The configured benchmark, refused (UsageError) when its scorer cannot run; `run`: also when its rollouts
    cannot (e.g. retrieval without a source; re-scoring recorded outputs needs only the scorer)."""
    known = registered_options()
    for name in options:
        option, datasets = known[name]
        if bench.name not in datasets:
            raise UsageError(f"{option.flag} applies only to task={' or '.join(datasets)}, not task={bench.name}")
    bench = bench.configure({**options, "data_dir": data_dir})
    if run:
        bench.check_ready()
    problem = bench.scorer_problem()  # e.g. API-Bank without its checkout: refused up front, not per rollout
    if problem:
        raise UsageError(f"task={bench.name}: the protocol scorer cannot run here: {problem}")
    return bench


def tool_environment(bench: Benchmark) -> dict[str, Any] | None:
    described = bench.tool_environment()
    return None if described is None else dict(described)
