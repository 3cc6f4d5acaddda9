"""Benchmark of a full 600-rollout optimizer job on the simulated endpoint (50 ms per request by default).

    python bench/optimizer.py [--method gepa|mipro|mapro|maspo|all] [--delay-ms 50] [--concurrency 64]
                              [--cell task=bfcl,topology=sequential,team_size=4] [--keep DIR] [--tracemalloc]

Prints figures only (asserts nothing about time), per method: wall time of the optimize phase and of the whole job;
the endpoint-bound floor measured in the same run, i.e. the time an engine with zero overhead would need for the
same sequence of endpoint work (each rollout batch: max(longest rollout in requests, ceil(requests / capacity))
request delays; each concurrent group of judge / probe calls: ceil(calls / min(its limit, capacity)) delays per
call it chains; each other live request — reflection, proposals — one delay) and the ratio optimize wall / floor
(target <= 1.3); the share of optimize wall time with at least one endpoint request outstanding; the time-averaged
number of rollouts and of requests in flight; and peak memory (the process's max RSS; with --tracemalloc also the
peak of Python allocations). The simulated server runs on a thread of this process (its CPU counts as engine time).
Data: the real BFCL split (bfcl-eval package data: 150 train / 50 validation / 100 test).
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import optimizers.mapro.potentials as potentials  # noqa: E402
import optimizers.mapro.method as mapro_method  # noqa: E402
import optimizers.maspo.credit as credit  # noqa: E402
import optimizers.maspo.method as maspo_method  # noqa: E402
from engine.chat.endpoint import Endpoint  # noqa: E402
from engine.job.config import JobConfig, build_config  # noqa: E402
from engine.job.optimization import LedgerRunner  # noqa: E402
import engine.job.run_job as job_module  # noqa: E402
from engine.job.context import JobContext  # noqa: E402
from engine.job.run_job import run_job  # noqa: E402
from engine.runner import RetryPolicy, Runner  # noqa: E402

METHODS = ("gepa", "mipro", "mapro", "maspo")


class InFlight:
    """Time-integral of a counter: average level and time spent above zero."""

    def __init__(self) -> None:
        self.level, self.last, self.area, self.busy, self.active = 0, time.perf_counter(), 0.0, 0.0, False

    def _advance(self) -> None:
        now = time.perf_counter()
        if self.active:
            dt = now - self.last
            self.area += self.level * dt
            if self.level > 0:
                self.busy += dt
        self.last = now

    def start(self) -> None:
        self.last, self.active, self.area, self.busy = time.perf_counter(), True, 0.0, 0.0

    def stop(self) -> None:
        self._advance()
        self.active = False

    def up(self) -> None:
        self._advance()
        self.level += 1

    def down(self) -> None:
        self._advance()
        self.level -= 1


class Floor:
    """The endpoint-bound floor of the optimize phase, accumulated from the structure of the work."""

    def __init__(self, delay: float, capacity: int):
        self.delay, self.capacity = delay, capacity
        self.seconds, self.batches, self.groups, self.singles = 0.0, 0, 0, 0
        self.in_batch = 0
        self.group_calls: int | None = None

    def batch_started(self) -> None:
        if self.in_batch == 0:
            self.pending: list[int] = []
        self.in_batch += 1

    def batch_done(self, records: list[Any]) -> None:
        """Batches that overlap in time (MASPO's concurrent offspring) count as one wave of their requests."""
        self.in_batch -= 1
        self.pending += [r.usage.n_llm_calls for r in records if not r.replayed and not r.budget_exhausted]
        if self.in_batch == 0 and self.pending:
            self.batches += 1
            self.seconds += self.delay * max(max(self.pending), math.ceil(sum(self.pending) / self.capacity))

    def group(self, n: int, limit: int, calls: int) -> None:
        if n and calls:
            self.groups += 1
            self.seconds += self.delay * math.ceil(n / min(limit, self.capacity)) * math.ceil(calls / n)

    def group_started(self) -> bool:
        """A group opened outside batches and other groups is accounted as a group (else inside its parent)."""
        if self.in_batch or self.group_calls is not None:
            return False
        self.group_calls = 0
        return True

    def request(self) -> None:
        if self.in_batch:
            return  # part of a rollout batch, or of a judge group overlapping one (counted with the batch)
        if self.group_calls is not None:
            self.group_calls += 1
            return
        self.singles += 1
        self.seconds += self.delay


def instrument(requests: InFlight, rollouts: InFlight, floor: Floor, phase: dict[str, float]) -> None:
    chat, rollout, optimize, run, gather = (Endpoint.chat, Runner._rollout, job_module.optimize, LedgerRunner._run,
                                           potentials.gather)

    async def timed_chat(self: Endpoint, body: dict[str, Any]) -> Any:
        if requests.active:
            floor.request()
        requests.up()
        try:
            return await chat(self, body)
        finally:
            requests.down()

    async def timed_run(self: LedgerRunner, *args: Any, **kwargs: Any) -> Any:
        floor.batch_started()
        records: list[Any] = []
        try:
            records = await run(self, *args, **kwargs)
        finally:
            floor.batch_done(records)
        return records

    async def timed_gather(thunks: Any, limit: int) -> Any:
        if not floor.group_started():
            return await gather(thunks, limit)
        try:
            return await gather(thunks, limit)
        finally:
            assert floor.group_calls is not None
            floor.group(len(thunks), limit, floor.group_calls)
            floor.group_calls = None

    async def timed_rollout(self: Runner, *args: Any, **kwargs: Any) -> Any:
        rollouts.up()
        try:
            return await rollout(self, *args, **kwargs)
        finally:
            rollouts.down()

    async def timed_optimize(ctx: JobContext) -> Any:
        requests.start()
        rollouts.start()
        t0 = time.perf_counter()
        try:
            return await optimize(ctx)
        finally:
            phase["optimize"] = time.perf_counter() - t0
            requests.stop()
            rollouts.stop()

    Endpoint.chat = timed_chat  # type: ignore[method-assign]
    LedgerRunner._run = timed_run  # type: ignore[method-assign]
    potentials.gather = credit.gather = maspo_method.gather = mapro_method.gather = timed_gather  # type: ignore[assignment]
    Runner._rollout = timed_rollout  # type: ignore[method-assign]
    job_module.optimize = timed_optimize  # the optimize phase as run_job calls it


def bench_method(method: str, args: argparse.Namespace) -> None:
    requests, rollouts, phase = InFlight(), InFlight(), {}
    floor = Floor(args.delay_ms / 1000, args.concurrency)
    instrument(requests, rollouts, floor, phase)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.keep) / method if args.keep else Path(tmp) / "job"
        cfg = build_config(cell=args.cell, method=method, seed=0, out=str(out), budget=600, task_endpoints=None,
                           model_id=None, data_dir=None, concurrency=args.concurrency, quiet=True)
        cfg = JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0), "sim_delay_s": args.delay_ms / 1000})
        if args.tracemalloc:
            tracemalloc.start()
        t0 = time.perf_counter()
        try:
            result = anyio.run(run_job, cfg)
        finally:
            total = time.perf_counter() - t0
            peak = tracemalloc.get_traced_memory()[1] if args.tracemalloc else None
            tracemalloc.stop()
    opt, wall = result["optimization"], phase["optimize"]
    usage = opt["usage"]
    calls = {k: usage.get(k, {}).get("model_calls", 0) for k in ("reflection", "judge", "probe")}
    print(f"method={method} cell={args.cell} delay={args.delay_ms:.0f}ms concurrency={args.concurrency} "
          f"stop={opt['stop_reason']} charged={opt['budget']['charged']} uncharged calls={calls}")
    print(f"  wall: optimize {wall:.2f} s, whole job {total:.2f} s")
    ratio = f"{wall / floor.seconds:.2f}" if floor.seconds else "n/a (no delay)"
    print(f"  endpoint-bound floor (same run): {floor.batches} rollout batches + {floor.groups} concurrent call groups "
          f"+ {floor.singles} single requests = {floor.seconds:.2f} s; optimize wall / floor = {ratio} "
          "(target <= 1.30)")
    print(f"  optimize wall share waiting on endpoints {100 * requests.busy / wall:.1f}%; in flight (time-averaged): "
          f"rollouts {rollouts.area / wall:.2f}, requests {requests.area / wall:.2f}")
    sel = result["selection"]
    print(f"  validation: baseline {sel['baseline_validation_score']} incumbent {sel['incumbent_validation_score']} "
          f"-> {sel['selected_candidate']}; test delta_pp {result['test']['delta_pp']}")
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    traced = f"tracemalloc peak {peak / 2**20:.1f} MiB, " if peak is not None else ""
    print(f"  peak memory: {traced}max RSS {rss_mb:.1f} MiB (process so far, server thread included)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--delay-ms", type=float, default=50.0)
    p.add_argument("--method", default="all", choices=(*METHODS, "all"))
    p.add_argument("--cell", default="task=bfcl,topology=sequential,team_size=4")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--keep", help="directory to keep the job directories in (default: temporary ones)")
    p.add_argument("--tracemalloc", action="store_true",
                   help="also trace Python allocations (peak heap; slows the engine, so it skews the time shares)")
    args = p.parse_args(argv)
    originals = (Endpoint.chat, LedgerRunner._run, potentials.gather, Runner._rollout, job_module.optimize)
    for method in METHODS if args.method == "all" else (args.method,):
        bench_method(method, args)
        (Endpoint.chat, LedgerRunner._run, potentials.gather, Runner._rollout,  # type: ignore[method-assign]
         job_module.optimize) = originals
        credit.gather = maspo_method.gather = mapro_method.gather = originals[2]
    return 0


if __name__ == "__main__":
    sys.exit(main())
