"""The grid options `sweep plan` and `sweep run` share, and the jobs they select (protocol section 4)."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.datasets import dataset_names
from core.errors import UsageError
from core.frameworks import protocol_frameworks
from core.grid import COMMUNICATIONS, MODELS, TEAM_SIZES
from engine.args import int_in
from engine.sweep.grid import SEEDS
from engine.sweep.plan import (Filters, JobSpec, check_data_dir, check_filters, custom_jobs, jobs_for, method_choices,
                               select)


def _names(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int_in("a number in a comma list")(p) for p in _names(text))


def add_grid_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("grid (protocol section 4; filters combine, a comma list means any of)")
    g.add_argument("--table", type=_numbers, default=(), help="tables 2-7, e.g. 3,4")
    g.add_argument("--methods", type=_names, default=(), help=f"any of {', '.join(method_choices())} "
                   "(identity: one seed-bundle job per runtime condition)")
    g.add_argument("--tasks", type=_names, default=(), help=f"any of {', '.join(dataset_names())}")
    g.add_argument("--topologies", type=_names, default=(), help="base topologies or registry keys")
    g.add_argument("--frameworks", type=_names, default=(), help=f"any of {', '.join(protocol_frameworks())}")
    g.add_argument("--communications", type=_names, default=(), help=",".join(COMMUNICATIONS))
    g.add_argument("--team-sizes", type=_numbers, default=(), help=",".join(map(str, (1, *TEAM_SIZES))))
    g.add_argument("--models", type=_names, default=(), help=",".join(MODELS))
    g.add_argument("--runtime", default="frameworks", help="frameworks (default: each configuration on its "
                   "framework runtime, as the protocol's tables; needs the extras) or native (the engine's own "
                   "runtime for the LangGraph column: fast, claims no table, non-conformant)")
    g.add_argument("--seeds", type=_numbers, default=SEEDS, help="optimizer seeds (default 0,1,2)")
    g.add_argument("--grid-file", default=None, help='custom grid: JSON {"jobs": [{"method", "cell", "seeds"?, '
                   '"allow_any_cell"?, "data_dir"?}]} instead of the protocol grid')
    g.add_argument("--data-dir", action="append", default=[], metavar="TASK=DIR", help="a task's data directory")
    g.add_argument("--budget", type=int_in("--budget", 1, 600), default=600, help="rollout budget per job")
    g.add_argument("--allow-small-budget", action="store_true", help="run methods below their smallest budget")


def data_dirs(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        task, sep, directory = item.partition("=")
        if not sep or not task or not directory:
            raise UsageError(f"--data-dir must be TASK=DIR, got {item!r}")
        task, directory = task.strip(), directory.strip()
        if task not in dataset_names():
            raise UsageError(f"--data-dir {item}: unknown task {task!r}; known: {', '.join(dataset_names())}")
        if task in out:
            raise UsageError(f"--data-dir given twice for {task}")
        try:
            out[task] = check_data_dir(directory)
        except ValueError as exc:
            raise UsageError(f"--data-dir {item}: {exc}") from None
    return out


def planned_jobs(args: argparse.Namespace) -> list[JobSpec]:
    f = check_filters(Filters(tables=args.table, methods=args.methods, tasks=args.tasks, topologies=args.topologies,
                              frameworks=args.frameworks, communications=args.communications,
                              team_sizes=args.team_sizes, models=args.models, seeds=args.seeds,
                              runtime=args.runtime))
    dirs = data_dirs(args.data_dir)
    if args.grid_file:
        return custom_jobs(Path(args.grid_file), f.seeds, dirs)
    jobs = jobs_for(select(f), f.seeds, dirs, f.runtime)
    if not jobs:
        raise UsageError("the filters select no job of the grid")
    return jobs
