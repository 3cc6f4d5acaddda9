"""Native topologies vs the framework runtimes on the same workload (prints figures, asserts nothing about time).

    python bench/frameworks.py [--rows 50] [--delay-ms 100] [--concurrency 16]
        [--workloads sequential,centralized,decentralized] [--runtimes native,langgraph,...] [--tiny]

Workloads (BFCL rows from the bfcl-eval package data, seed prompts): Sequential with 4 stages (native, LangGraph,
CrewAI), Centralized with a manager and 3 workers (native, LangGraph, AutoGen), Decentralized 4 peers x 2 rounds
(native, LangGraph, Agents SDK). The simulated endpoint runs in a subprocess with a fixed delay per request, so
this process's CPU time is the engine's (and the framework's) alone. Per runtime: engine CPU per model call (and
its ratio to native, measured first in the same run), wall time (and its ratio to native), model calls, the
time-averaged number of requests in flight at the endpoint pool, the gateway's own cost per call (time inside its
handler minus the recorded call it waits on; target <= 1 ms), usable rollouts of the rows run, and the share of rows
scored 1. The batch runs with the long-lived heap frozen, as a job's phases do (engine/heap.py). A runtime whose
extra is not installed is listed as skipped. `--tiny` is the smoke run
(tests/test_bench_frameworks.py), its figures meaningless as timings.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.registry import get_benchmark  # noqa: E402
from core.cell import parse_cell  # noqa: E402
from core.contracts import JOB_CONTRACT_VERSION  # noqa: E402
from core.protocol import OPTIMIZATION_DECODING  # noqa: E402
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts  # noqa: E402
from engine.gateway.server import Gateway  # noqa: E402
from engine.heap import long_lived_heap_frozen  # noqa: E402
from engine.runner import RetryPolicy, RolloutSpec, Runner  # noqa: E402
from engine.runtimes import build_topology, missing_extra, needs_gateway  # noqa: E402
from engine.store import Store  # noqa: E402
from topologies.prompts import seed_bundle  # noqa: E402

MODEL = "bench-model"
DECODING = OPTIMIZATION_DECODING
WORKLOADS = {"sequential": ("native", "langgraph", "crewai"), "centralized": ("native", "langgraph", "autogen"),
             "decentralized": ("native", "langgraph", "openai_agents")}


class InFlight:
    """Time-averaged requests in flight at the pool (wraps its chat)."""

    def __init__(self, pool: EndpointPool) -> None:
        self.level, self.area, self.last, self.calls = 0, 0.0, time.perf_counter(), 0
        inner = pool.chat

        async def chat(body: dict[str, Any], encoded: str | None = None) -> tuple[dict[str, Any], float]:
            self._move(+1)
            try:
                return await inner(body, encoded)
            finally:
                self._move(-1)

        pool.chat = chat  # type: ignore[method-assign]

    def _move(self, step: int) -> None:
        now = time.perf_counter()
        self.area += self.level * (now - self.last)
        self.last, self.level = now, self.level + step
        self.calls += step > 0


def start_endpoint(delay_ms: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve-sim", "--tasks", "bfcl", "--port", "0",
                             "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, cwd=Path(__file__).resolve().parents[1])
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


async def measure(url: str, workload: str, framework: str, rows: int, concurrency: int) -> dict[str, Any]:
    cell = parse_cell(f"task=bfcl,topology={workload},framework={framework}")
    bench = get_benchmark("bfcl")
    topology = build_topology(cell, contract_version=JOB_CONTRACT_VERSION)
    bundle = seed_bundle(workload, "bfcl", topology.roles("bfcl", 4))
    ids = list(bench.splits().train[:rows])
    specs = [RolloutSpec(row=r, bundle=bundle, seed=1000 + i, phase="optimize", rollout_key=f"{framework}:{i}",
                         position=i) for i, r in enumerate(bench.load_rows(ids))]
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncExitStack() as stack:
            pool = EndpointPool([Endpoint(url, MODEL, capacity=64, timeouts=Timeouts(read=120))])
            stack.push_async_callback(pool.aclose)
            flight = InFlight(pool)
            gateway = await stack.enter_async_context(Gateway()) if needs_gateway(topology) else None
            store = await stack.enter_async_context(Store(Path(tmp) / "card.sqlite", run_id="bench"))
            await store.add_node(node_id="run", parent_id=None, instance_key="bench", task_key="bench",
                                 status="running", worker_key=None, level=0, actor="bench")
            runner = Runner(store=store, pool=pool, bench=bench, topology=topology, run_node="run",
                            retry=RetryPolicy(base_delay=0.0), concurrency=concurrency, gateway=gateway)
            with long_lived_heap_frozen():  # as a job runs its phases (engine/job/run_job.py)
                cpu0, wall0 = time.process_time(), time.perf_counter()
                flight.area, flight.last = 0.0, wall0
                records = await runner.run_batch(specs, DECODING, None)
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    calls = max(flight.calls, 1)
    own = None if gateway is None else (gateway.handler_seconds - gateway.upstream_seconds) / max(gateway.requests, 1)
    return {"wall_s": wall, "cpu_ms_per_call": 1000 * cpu / calls, "gateway_ms_per_call": None if own is None
            else 1000 * own, "calls": flight.calls, "in_flight": flight.area / wall,
            "scored_1": sum(1 for r in records if r.score == 1.0) / len(records),
            "usable": sum(1 for r in records if r.status.usable)}


def line(framework: str, m: dict[str, Any], base: dict[str, Any], rows: int) -> str:
    """One runtime's figures; the ratios are against native measured in the same run (same process settings)."""
    gw = "-" if m["gateway_ms_per_call"] is None else f"{m['gateway_ms_per_call']:.3f}"
    return (f"  {framework:<14} engine CPU/call {m['cpu_ms_per_call']:6.2f} ms "
            f"({m['cpu_ms_per_call'] / max(base['cpu_ms_per_call'], 1e-9):5.2f}x native)  "
            f"wall {m['wall_s']:7.2f} s ({m['wall_s'] / base['wall_s']:.2f}x native)  calls {m['calls']:5d}  "
            f"in flight {m['in_flight']:5.1f}  gateway own/call {gw} ms  usable {m['usable']}/{rows}  "
            f"scored 1: {m['scored_1']:.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=50)
    p.add_argument("--delay-ms", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--runtimes", default=None,
                   help="comma-separated subset of native,langgraph,crewai,autogen,openai_agents (default: all); "
                        "native is always measured first, as the baseline")
    p.add_argument("--tiny", action="store_true", help="a smoke run: 3 rows, 5 ms per request, 3 in flight")
    args = p.parse_args()
    if args.tiny:
        args.rows, args.delay_ms, args.concurrency = 3, 5, 3
    workloads = args.workloads.split(",")
    chosen = None if args.runtimes is None else set(args.runtimes.split(",")) | {"native"}
    known = {f for fs in WORKLOADS.values() for f in fs}
    bad = [w for w in workloads if w not in WORKLOADS] + sorted((chosen or set()) - known)
    if bad or args.rows < 1 or args.concurrency < 1 or args.delay_ms < 0:
        p.error(f"unknown workload or runtime: {', '.join(bad)}" if bad else "--rows and --concurrency must be >= 1")
    proc, url = start_endpoint(args.delay_ms)
    try:
        for workload in workloads:
            print(f"\n{workload}: {args.rows} BFCL rows, {args.delay_ms} ms per request, {args.concurrency} rollouts "
                  "in flight", flush=True)
            base: dict[str, Any] | None = None
            for framework in WORKLOADS[workload]:
                if chosen is not None and framework not in chosen:
                    continue
                reason = missing_extra(framework)
                if reason:
                    print(f"  {framework:<14} skipped: {reason}", flush=True)
                    continue
                m = anyio.run(measure, url, workload, framework, args.rows, args.concurrency)
                base = base or m
                print(line(framework, m, base, args.rows), flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
