"""`python -m engine sweep {plan,run,status,serve}`: the protocol grid as one resumable command."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from core.errors import UsageError
from engine.args import StrictParser, int_in, positive_float
from engine.sweep.cost import Cost, estimate, method_plans
from engine.sweep.grid_options import add_grid_options, data_dirs, planned_jobs
from engine.sweep.projection import GPUS, Projection, assumptions, project

__all__ = ["add_grid_options", "data_dirs", "main", "planned_jobs"]


def add_projection_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("GPU-hours and wall time (the throughput model of engine/sweep/projection.py)")
    g.add_argument("--endpoints", type=int_in("--endpoints", 1), default=None, help="GPUs serving the task "
                   "model, one endpoint each: prints GPU-hours and wall time of the runnable jobs")
    g.add_argument("--gpu", default=None, help=f"GPU type: {', '.join(GPUS)} (default a100, the calibrated one)")
    g.add_argument("--limit", type=int_in("--limit", 1), default=32, help="in-flight requests per endpoint, as "
                   "`sweep run --limit` (default 32)")
    g.add_argument("--busy", type=_fraction, default=0.9, help="fraction of the time the endpoints are busy "
                   "(default 0.9; bench/sweep.py measures it)")


def _fraction(text: str) -> float:
    value = positive_float("--busy")(text)
    if value > 1:
        raise UsageError(f"--busy must be in (0, 1], got {text}")
    return value


def projection_of(args: argparse.Namespace, cost: Cost) -> Projection | None:
    if args.endpoints is None:
        if args.gpu is not None:
            raise UsageError("--gpu needs --endpoints N (the GPUs serving the task model)")
        return None
    gpu = args.gpu or "a100"
    if gpu not in GPUS:
        raise UsageError(f"unknown --gpu {gpu!r}; known: {', '.join(GPUS)}")
    return project(cost, GPUS[gpu], args.endpoints, args.limit, args.busy)


def print_projection(p: Projection) -> None:
    print(f"GPU-hours on {p.gpu} (throughput model: engine/sweep/projection.py): {p.gpu_hours:,.1f} GPU-hours, "
          f"wall {p.wall_hours:,.1f} h ({p.wall_hours / 24:,.1f} days) on {p.endpoints} endpoints, "
          f"{p.model_calls:,} model calls at {p.tokens_per_s:,.0f} generated tok/s per GPU")
    print(f"reference layout (one job per GPU, one request in flight): {p.reference_gpu_hours:,.1f} GPU-hours, "
          f"{p.reference_calls:,} model calls")
    print("assumptions:")
    for line in assumptions(GPUS[p.gpu], p.concurrency, p.busy):
        print(f"  - {line}")


def plan_main(argv: Sequence[str]) -> int:
    p = StrictParser(prog="engine sweep plan", description="Print a sweep's jobs, counts and rough cost (and with "
                     "--endpoints N its GPU-hours and wall time); runs nothing.")
    add_grid_options(p)
    add_projection_options(p)
    p.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    args = p.parse_args(list(argv))
    jobs = planned_jobs(args)
    runnable = [j for j in jobs if j.runnable]
    cost = estimate(runnable, args.budget)
    projection = projection_of(args, cost)
    missing = [j for j in jobs if not j.runnable]
    if args.json:
        doc: dict[str, object] = {
            "jobs": [{"key": j.key, "method": j.method, "cell": j.cell, "seed": j.seed, "framework": j.framework,
                      "tables": list(j.tables), "runnable": j.runnable, "reason": j.reason} for j in jobs],
            "counts": {"jobs": len(jobs), "runnable": len(runnable), "not_implemented": len(missing)},
            "cost": cost.__dict__}
        if projection is not None:
            doc["projection"] = projection.__dict__
            doc["assumptions"] = assumptions(GPUS[projection.gpu], projection.concurrency, projection.busy)
        print(json.dumps(doc, sort_keys=True))
        return 0
    print(f"{'':4}  {'job':<58} {'framework':<13} tables")
    for j in jobs:
        print(f"{'run ' if j.runnable else 'SKIP'}  {j.key:<58} {j.framework:<13} "
              f"tables={','.join(map(str, j.tables)) or '-'}" + (f"  not implemented: {j.reason}" if j.reason else ""))
    print(f"\n{len(jobs)} jobs: {len(runnable)} runnable, {len(missing)} not implemented (listed above, not run)")
    print(f"rough cost of the runnable jobs: {cost.rollouts:,} rollouts ({cost.shared_rollouts_saved:,} more "
          f"saved by shared seed-bundle evaluations), ~{cost.model_calls:,} model calls, ~{cost.prompt_tokens:,} "
          f"prompt + ~{cost.completion_tokens:,} completion tokens (assumed per-call sizes: engine/sweep/cost.py)")
    if projection is not None:
        print_projection(projection)
    for method, plan in method_plans(runnable, args.budget).items():
        print(f"plan {method}: {plan}")
    return 0


def status_main(argv: Sequence[str]) -> int:
    from engine.sweep.status import status_main as main

    return main(argv)


SUBCOMMANDS = {"plan": plan_main, "status": status_main}
USAGE = ("usage: python -m engine sweep {plan,run,status,serve} ...\n\n"
         "  plan    print the jobs, counts and rough cost of a grid selection (runs nothing)\n"
         "  run     run (or resume) a sweep in --sweep-dir on shared endpoints, local or on Ray\n"
         "  status  summarize a sweep directory\n"
         "  serve   start one OpenAI-compatible server per GPU and print the endpoint list")


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    name, rest = argv[0], list(argv[1:])
    if name == "run":
        from engine.sweep.run_cmd import run_main

        return run_main(rest)
    if name == "serve":
        from engine.sweep.serve import serve_main

        return serve_main(rest)
    if name not in SUBCOMMANDS:
        print(f"error: unknown sweep command {name!r}\n{USAGE}", file=sys.stderr)
        return 2
    return SUBCOMMANDS[name](rest)
