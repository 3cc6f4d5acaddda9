"""`python -m engine sweep run`: plan, record the jobs in sweep.sqlite, run the pending and interrupted ones on a
shared endpoint pool (local executor, or Ray with `--executor ray --address ...`), then aggregate."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import anyio

from core.cell import parse_cell
from core.errors import UsageError
from engine.chat.preflight import DEFAULT_STARTUP_TIMEOUT_S
from engine.args import StrictParser, check_out_directory, int_in, positive_float
from engine.chat.routing import ROUTINGS, check_routing
from engine.sweep.aggregation import aggregate_sweep
from engine.sweep.grid_options import add_grid_options, planned_jobs
from engine.sweep.endpoints import Checked, EndpointSpec, preflight, simulated, task_urls_from
from engine.sweep.evalcache import EvaluationCache
from engine.sweep.jobcall import JobSettings
from engine.sweep.plan import JobSpec
from engine.sweep.progress import Progress
from engine.sweep.heal import heal_rounds, wait_until_healthy
from engine.sweep.state import TO_RUN, SweepState
from optimizers.registry import uses_reflection

SIM_MODEL, SIM_REFLECTION = "simulated-policy", "simulated-reflection"


def make_parser() -> argparse.ArgumentParser:
    p = StrictParser(prog="engine sweep run", description="Run or resume a sweep of protocol jobs.")
    p.add_argument("--sweep-dir", required=True, help="sweep.sqlite, runs/<method>/<task>/<key>/<model>/<seed>/, "
                   "evaluation cache and summary.json live here")
    add_grid_options(p)
    e = p.add_argument_group("endpoints")
    e.add_argument("--task-endpoint", action="append", default=None, help="repeatable; else --endpoints-file, "
                   "else TASK_ENDPOINTS")
    e.add_argument("--endpoints-file", default=None, help="one base URL a line (e.g. `sweep serve` output)")
    e.add_argument("--reflection-endpoint", default=None, help="else REFLECTION_MODEL_BASE_URL")
    e.add_argument("--model-id", default=None, help="task model id served by the endpoints (else MODEL_ID)")
    e.add_argument("--reflection-model", default=None)
    e.add_argument("--simulated", action="store_true", help="start the built-in simulated endpoint instead "
                   "(jobs are labelled simulated and non-conformant)")
    e.add_argument("--sim-delay-ms", type=positive_float("--sim-delay-ms", allow_zero=True), default=0.0)
    e.add_argument("--limit", type=int_in("--limit", 1), default=32, help="in-flight requests per endpoint, "
                   "shared by all jobs (default 32)")
    e.add_argument("--max-outage", type=positive_float("--max-outage", allow_zero=True), default=900.0,
                   help="seconds requests wait while no endpoint is healthy (default 900); waits are logged to "
                   "SWEEP_DIR/pool-events.jsonl")
    e.add_argument("--routing", type=check_routing, default=None, metavar="|".join(ROUTINGS),
                   help="which task endpoint serves a request (default cache-aware with more than one endpoint, "
                        "else least-loaded; engine/chat/routing.py); never changes a result, resumable with another")
    e.add_argument("--request-timeout", type=positive_float("--request-timeout"), default=1200.0)
    e.add_argument("--startup-timeout", type=positive_float("--startup-timeout"), default=DEFAULT_STARTUP_TIMEOUT_S)
    x = p.add_argument_group("execution")
    x.add_argument("--executor", choices=("local", "ray"), default="local")
    x.add_argument("--address", default=None, help="Ray cluster address (required with --executor ray; never "
                   "auto-detected); `local` starts a private one-machine instance")
    x.add_argument("--ray-local-cpus", type=int_in("--ray-local-cpus", 1), default=None,
                   help="CPUs of the private instance of `--address local` (default: all)")
    x.add_argument("--workers", type=int_in("--workers", 1), default=None, help="local executor: worker processes "
                   "(default: the CPU count; 1 runs every job in this process); endpoint limits hold across them")
    x.add_argument("--max-jobs", type=int_in("--max-jobs", 1), default=64, help="jobs running at once")
    x.add_argument("--job-retries", type=int_in("--job-retries", 0), default=1, help="extra attempts per job")
    x.add_argument("--heal-rounds", type=int_in("--heal-rounds", 0), default=3, help="rounds that re-run jobs left "
                   "degraded by infrastructure failures, each once every endpoint answers (default 3)")
    x.add_argument("--evaluation-cache", default=None, help="shared evaluations (default SWEEP_DIR/evaluations)")
    x.add_argument("--no-aggregate", action="store_true", help="skip `aggregate` at the end")
    x.add_argument("--include-nonconformant", action="store_true", help="passed to aggregate")
    x.add_argument("--quiet", action="store_true", help="no progress lines")
    x.add_argument("--smoke", type=int_in("--smoke", 1), default=None, metavar="N",
                   help="every job a smoke run (job --smoke N): the first N rows of each split, each method's "
                        "smallest budget unless --budget is given below 600, non-conformant; needs its own --sweep-dir")
    return p


def settings_from(args: argparse.Namespace, model_id: str, n_endpoints: int) -> JobSettings:
    """The settings every job shares; a job may have `--limit` rollouts in flight per task endpoint, however the
    endpoints were given (flags, --endpoints-file, TASK_ENDPOINTS or the simulated one)."""
    return JobSettings(budget=args.budget, allow_small_budget=args.allow_small_budget,
                       model_id=None if args.simulated else model_id,
                       reflection_model=args.reflection_model or (SIM_REFLECTION if args.simulated else None),
                       concurrency=args.limit * max(1, n_endpoints),
                       request_timeout=args.request_timeout, simulated=args.simulated,
                       max_outage=args.max_outage, smoke=args.smoke, routing=args.routing)


def run_main(argv: Sequence[str]) -> int:
    """Everything that can fail on bad input (options, grid, endpoints, the start-up check of every endpoint)
    fails before the sweep directory is written."""
    args = make_parser().parse_args(list(argv))
    check_flags(args)
    sweep_dir = Path(args.sweep_dir)
    check_out_directory(sweep_dir, "--sweep-dir")
    jobs = planned_jobs(args)
    if args.executor == "ray" and args.address in (None, "", "auto"):
        raise UsageError("--executor ray needs --address naming a running cluster (host:port, ray://host:10001) or "
                         "`local`; it never connects to a cluster it was not told about (`auto` is refused)")
    urls = () if args.simulated else task_urls_from(args.task_endpoint, args.endpoints_file)
    if not args.simulated and not urls:
        raise UsageError("no task endpoint: give --task-endpoint, --endpoints-file or TASK_ENDPOINTS (see `sweep "
                         "serve`), or --simulated")
    model_id = SIM_MODEL if args.simulated else (args.model_id or os.environ.get("MODEL_ID") or "")
    if not model_id:
        raise UsageError("--model-id (or MODEL_ID) is required with real task endpoints")
    settings = settings_from(args, model_id, 1 if args.simulated else len(urls))
    reflection: str | None
    with ExitStack() as stack:
        if args.simulated:
            tasks = sorted({parse_cell(j.cell).task for j in jobs if j.runnable}) or ["bfcl"]
            url = stack.enter_context(simulated(tasks, None, args.sim_delay_ms / 1000.0))
            urls, reflection = (url,), url
        else:
            reflection = args.reflection_endpoint or os.environ.get("REFLECTION_MODEL_BASE_URL") or None
        endpoints = EndpointSpec(urls, reflection, args.limit, args.max_outage, sweep_dir / "pool-events.jsonl")
        needs_reflection = any(uses_reflection(j.method) for j in jobs if j.runnable)
        reflection_model = settings.reflection_model if needs_reflection else None

        check = Preflight(endpoints, model_id, reflection_model, args.startup_timeout)
        check()  # every endpoint answers before the sweep directory is written
        counts = run_checked(args, jobs, sweep_dir, settings, check)
    print(f"sweep: finished={counts['finished']} degraded={counts['degraded']} failed={counts['failed']} "
          f"not_implemented={counts['not_implemented']} pending={counts['pending'] + counts['running']}",
          file=sys.stderr)
    if not args.no_aggregate and counts["finished"]:
        aggregate_sweep(sweep_dir, args.include_nonconformant)
    return 0 if counts["failed"] == 0 and counts["degraded"] == 0 else 1


def check_flags(args: argparse.Namespace) -> None:
    """Contradictory flags are refused up front (one line, exit 2), never silently ignored."""
    if args.simulated:
        given = [flag for flag, value in (("--task-endpoint", args.task_endpoint), ("--endpoints-file",
                 args.endpoints_file), ("--reflection-endpoint", args.reflection_endpoint),
                 ("--model-id", args.model_id)) if value]
        if given:
            raise UsageError(f"--simulated starts the built-in simulated endpoint: it contradicts {given[0]} (drop "
                             "one of them)")
    elif args.sim_delay_ms:
        raise UsageError("--sim-delay-ms applies to the built-in simulated endpoint only: add --simulated")
    if args.executor == "ray" and args.workers is not None:
        raise UsageError("--workers applies to the local executor only (Ray places its own workers)")
    if args.executor == "ray" and args.routing is not None:
        raise UsageError("--routing applies to the local executor only (Ray's workers route by the default rule)")
    if args.executor != "ray" and (args.address is not None or args.ray_local_cpus is not None):
        raise UsageError("--address and --ray-local-cpus apply to --executor ray only")


class Preflight:
    """The start-up check of every endpoint (UsageError naming a failing one), once per pass over the jobs: before
    the first and before each heal round; the pass's pools take what it heard and check nothing again."""

    def __init__(self, endpoints: EndpointSpec, model_id: str, reflection_model: str | None,
                 startup_timeout: float) -> None:
        self.endpoints, self.model_id = endpoints, model_id
        self.reflection_model, self.startup_timeout = reflection_model, startup_timeout
        self.last: Checked | None = None

    def __call__(self) -> None:
        self.last = anyio.run(lambda: preflight(self.endpoints, model_id=self.model_id,
                                                reflection_model=self.reflection_model,
                                                startup_timeout=self.startup_timeout))


def run_checked(args: argparse.Namespace, jobs: list[JobSpec], sweep_dir: Path, settings: JobSettings,
                check: Preflight) -> dict[str, int]:
    runnable = [j for j in jobs if j.runnable]
    sweep_dir.mkdir(parents=True, exist_ok=True)
    state = SweepState(sweep_dir / "sweep.sqlite")
    try:
        state.check_settings(settings.as_dict())
        state.add(jobs)
        state.retry_failed()
        to_run = state.keys_with(TO_RUN)
        todo = [j for j in runnable if j.key in to_run]
        done = len(runnable) - len(todo)
        print(f"sweep: {len(jobs)} jobs ({len(runnable)} runnable, {len(jobs) - len(runnable)} not implemented); "
              f"{done} already finished, {len(todo)} to run", file=sys.stderr, flush=True)
        cache = EvaluationCache(Path(args.evaluation_cache) if args.evaluation_cache else sweep_dir / "evaluations")
        progress = Progress(len(runnable), done, quiet=args.quiet)
        execute(args, todo, sweep_dir, state, settings, check, cache, progress)
        progress.close()

        def degraded() -> list[str]:
            keys = state.keys_with(("degraded",))
            return [j.key for j in runnable if j.key in keys]

        def rerun(keys: list[str]) -> None:
            again = Progress(len(keys), 0, quiet=args.quiet)
            execute(args, [j for j in runnable if j.key in set(keys)], sweep_dir, state, settings, check, cache,
                    again)
            again.close()

        heal_rounds(args.heal_rounds, degraded, lambda: wait_until_healthy(check, args.max_outage), rerun)
        return state.counts()
    finally:
        state.close()


def execute(args: argparse.Namespace, todo: list[JobSpec], sweep_dir: Path, state: SweepState,
            settings: JobSettings, check: Preflight, cache: EvaluationCache, progress: Progress) -> None:
    """One pass over `todo` on the endpoints `check` last found answering (no second start-up check)."""
    endpoints, model_id = check.endpoints, check.model_id
    if args.executor == "ray":
        from engine.sweep.ray_exec import run_ray

        run_ray(todo, sweep_dir, state, settings, endpoints, model_id=model_id, address=args.address,
                max_jobs=args.max_jobs, job_retries=args.job_retries, cache=cache,
                startup_timeout=args.startup_timeout, progress=progress, local_cpus=args.ray_local_cpus,
                checked=check.last)
        return
    workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
    if workers > 1 and len(todo) > 1:
        from engine.sweep.workers import run_workers

        anyio.run(lambda: run_workers(todo, sweep_dir, state, settings, endpoints, model_id=model_id, workers=workers,
                                      max_jobs=args.max_jobs, job_retries=args.job_retries, cache=cache,
                                      startup_timeout=args.startup_timeout, progress=progress,
                                      checked=check.last))
        return
    from engine.sweep.local import run_local

    anyio.run(lambda: run_local(todo, sweep_dir, state, settings, endpoints, model_id=model_id,
                                max_jobs=args.max_jobs, job_retries=args.job_retries, cache=cache,
                                startup_timeout=args.startup_timeout, progress=progress, checked=check.last))
