"""Benchmark of a full 600-rollout GEPA job on the simulated endpoint (50 ms per request by default).

    python bench/optimizer.py [--delay-ms 50] [--method gepa] [--concurrency 64] [--keep DIR]

Prints figures only (asserts nothing about time): wall time of the optimize phase and of the whole job; the share
of optimize wall time during which at least one endpoint request (task or reflection) was outstanding ("waiting on
endpoints") against the share with none outstanding (engine + optimizer work between requests); the time-averaged
number of rollouts and of requests in flight (validation evaluations run all rows concurrently, minibatches 3);
and peak memory (the process's max RSS; with --tracemalloc also the peak of Python allocations). The simulated server runs on
a thread of this process, so its own CPU is counted in the engine share. Protocol split sizes: 150 train / 50
validation / 100 test rows of the fake benchmark.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.chat.endpoint import Endpoint  # noqa: E402
from engine.job.config import JobConfig, build_config  # noqa: E402
from engine.job.run_job import _Job, run_job  # noqa: E402
from engine.runner import RetryPolicy, Runner  # noqa: E402
from tests.conftest import start_sim  # noqa: E402
from tests.fakebench import FakeBench  # noqa: E402


class InFlight:
    """Time-integral of a counter: average level and time spent above zero."""

    def __init__(self) -> None:
        self.level = 0
        self.last = time.perf_counter()
        self.area = 0.0
        self.busy = 0.0
        self.active = False

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


def instrument(requests: InFlight, rollouts: InFlight, phase: dict[str, float]) -> None:
    chat, rollout, optimize, batch = Endpoint.chat, Runner._rollout, _Job.optimize, Runner.run_batch
    phase["batches"] = 0

    async def counted_batch(self: Runner, *args: Any, **kwargs: Any) -> Any:
        if requests.active:
            phase["batches"] += 1
        return await batch(self, *args, **kwargs)

    async def timed_chat(self: Endpoint, body: dict[str, Any]) -> Any:
        requests.up()
        try:
            return await chat(self, body)
        finally:
            requests.down()

    async def timed_rollout(self: Runner, *args: Any, **kwargs: Any) -> Any:
        rollouts.up()
        try:
            return await rollout(self, *args, **kwargs)
        finally:
            rollouts.down()

    async def timed_optimize(self: _Job) -> Any:
        requests.start()
        rollouts.start()
        t0 = time.perf_counter()
        try:
            return await optimize(self)
        finally:
            phase["optimize"] = time.perf_counter() - t0
            requests.stop()
            rollouts.stop()

    Endpoint.chat = timed_chat  # type: ignore[method-assign]
    Runner.run_batch = counted_batch  # type: ignore[method-assign]
    Runner._rollout = timed_rollout  # type: ignore[method-assign]
    _Job.optimize = timed_optimize  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--delay-ms", type=float, default=50.0)
    p.add_argument("--method", default="gepa")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--keep", help="job directory to keep (default: a temporary one)")
    p.add_argument("--tracemalloc", action="store_true",
                   help="also trace Python allocations (peak heap; slows the engine, so it skews the time shares)")
    args = p.parse_args(argv)

    requests, rollouts, phase = InFlight(), InFlight(), {}
    instrument(requests, rollouts, phase)
    bench = FakeBench(n_train=150, n_validation=50, n_test=100)
    server = start_sim(FakeBench(n_train=150, n_validation=50, n_test=100), delay_s=args.delay_ms / 1000)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.keep) if args.keep else Path(tmp) / "job"
        cfg = build_config(cell="task=gpqa,topology=single", method=args.method, seed=0, out=str(out), budget=600,
                           task_endpoints=[server.base_url], model_id="test-model", data_dir=None,
                           concurrency=args.concurrency, reflection_endpoint=server.base_url,
                           reflection_model="simulated-reflection", quiet=True, request_timeout=60.0)
        cfg = JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})
        if args.tracemalloc:
            tracemalloc.start()
        t0 = time.perf_counter()
        try:
            result = anyio.run(run_job, cfg, bench)
        finally:
            total = time.perf_counter() - t0
            peak = tracemalloc.get_traced_memory()[1] if args.tracemalloc else None
            tracemalloc.stop()
            server.stop()
        n_requests = len(server.log)
    opt = result["optimization"]
    wall = phase["optimize"]
    wait = requests.busy
    print(f"method={args.method} delay={args.delay_ms:.0f}ms concurrency={args.concurrency} "
          f"stop={opt['stop_reason']} charged={opt['budget']['charged']} "
          f"reflection_calls={opt['usage']['reflection']['model_calls']} requests_total={n_requests}")
    print(f"wall: optimize {wall:.2f} s, whole job {total:.2f} s")
    floor = phase["batches"] * args.delay_ms / 1000
    print(f"baseline (same run): {phase['batches']} sequential rollout batches x {args.delay_ms:.0f} ms = "
          f"{floor:.2f} s endpoint-bound floor (+ {opt['usage']['reflection']['model_calls']} reflection calls); "
          f"optimize wall / floor = {wall / floor:.2f}")
    print(f"optimize wall share: waiting on endpoints {100 * wait / wall:.1f}%, "
          f"engine + optimizer (no request outstanding) {100 * (wall - wait) / wall:.1f}%")
    print(f"in flight (time-averaged over optimize): rollouts {rollouts.area / wall:.2f}, "
          f"requests {requests.area / wall:.2f}")
    print(f"validation: baseline {result['selection']['baseline_validation_score']} "
          f"incumbent {result['selection']['incumbent_validation_score']} -> "
          f"{result['selection']['selected_candidate']}; test delta_pp {result['test']['delta_pp']}")
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    traced = f"tracemalloc peak {peak / 2**20:.1f} MiB, " if peak is not None else ""
    print(f"peak memory: {traced}max RSS {rss_mb:.1f} MiB (process, server thread included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
