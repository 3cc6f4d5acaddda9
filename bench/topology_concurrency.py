"""Concurrency inside one rollout (prints numbers, asserts nothing about time).

    python bench/topology_concurrency.py [--delay 0.1] [--replicas 4] [--repeats 3]

A 4-replica Independent rollout against the simulated endpoint with a fixed per-request delay: the replicas
run concurrently, so the rollout should take about one call's time, not four. The serialized baseline, measured
in the same run, is the same rollout with the endpoint's capacity limited to 1 (one request in flight). Also
shown: a 4-peer x 2-round Decentralized rollout (about two calls' time when peers overlap).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.protocol import OPTIMIZATION_DECODING  # noqa: E402
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts  # noqa: E402
from engine.runner import RetryPolicy, RolloutSpec, Runner  # noqa: E402
from engine.store import Store  # noqa: E402
from bench.sumbench import SumBench  # noqa: E402
from engine.sim.policy import Policy  # noqa: E402
from engine.sim.server import SimServer  # noqa: E402
from topologies.prompts import seed_bundle  # noqa: E402
from topologies.registry import get_topology  # noqa: E402

DECODING = OPTIMIZATION_DECODING


def bench() -> SumBench:
    """bench/ stands alone: its own sum benchmark (gpqa's team specs), never the test suite's fakes."""
    return SumBench()


def start_sim(delay_s: float) -> SimServer:
    b = bench()
    s = b.splits()
    server = SimServer(Policy({"sum": (b, b.load_rows([*s.train, *s.validation, *s.test]))},
                              model_ids=("test-model",)), delay_s=delay_s)
    server.start()
    return server


async def one_rollout(url: str, topology: str, n: int, capacity: int, key: str, db: Path) -> float:
    fake = bench()
    top = get_topology(topology, n)
    bundle = seed_bundle(topology, "gpqa", top.roles("gpqa", n))
    row = fake.load_rows([fake.splits().train[0]])[0]
    spec = RolloutSpec(row=row, bundle=bundle, seed=7, phase="optimize", rollout_key=key)
    async with AsyncExitStack() as stack:
        pool = EndpointPool([Endpoint(url, "test-model", capacity=capacity, timeouts=Timeouts(read=30))])
        stack.push_async_callback(pool.aclose)
        store = await stack.enter_async_context(Store(db, run_id="bench"))
        await store.add_node(node_id="run", parent_id=None, instance_key="b", task_key="job", status="running",
                             worker_key=None, level=0, actor="bench")
        runner = Runner(store=store, pool=pool, bench=fake, topology=top, run_node="run",
                        retry=RetryPolicy(base_delay=0.0), concurrency=1)
        t0 = time.perf_counter()
        await runner.run(spec, DECODING)
        return time.perf_counter() - t0


def measure(url: str, topology: str, n: int, capacity: int, repeats: int, tmp: Path) -> float:
    times = []
    for i in range(repeats):
        db = tmp / f"{topology}-{capacity}-{i}.sqlite"
        times.append(anyio.run(one_rollout, url, topology, n, capacity, f"{topology}:{capacity}:{i}", db))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.1, help="simulated seconds per request")
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    server = start_sim(args.delay)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp)
            print(f"simulated delay per request: {args.delay * 1000:.0f} ms; median of {args.repeats}")
            for topology, calls_on_path in (("independent", 1), ("decentralized", 2)):
                concurrent = measure(server.base_url, topology, args.replicas, args.replicas, args.repeats, path)
                serial = measure(server.base_url, topology, args.replicas, 1, args.repeats, path)
                print(f"{topology:14s} n={args.replicas}: concurrent {concurrent * 1000:7.1f} ms "
                      f"({concurrent / args.delay:4.2f} x one call; critical path {calls_on_path} call(s)), "
                      f"serialized baseline {serial * 1000:7.1f} ms, ratio serialized/concurrent "
                      f"{serial / concurrent:4.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
