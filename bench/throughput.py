"""Throughput of the runner against the simulated endpoint (a separate process, 100 ms per response).

Prints: wall time of 200 single-agent BFCL rollouts at concurrency 1 (the serialized baseline) and 64, the
speedup, the engine's CPU seconds per 1,000 recorded calls, recording on vs off at concurrency 64, the store's
bytes per rollout as it grows, and the peak resident memory of a full identity job. Figures only, no asserts.

usage: python bench/throughput.py [--rollouts 200] [--delay-ms 100]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.registry import get_benchmark  # noqa: E402
from core.models import PromptBundle  # noqa: E402
from core.protocol import OPTIMIZATION_DECODING  # noqa: E402
from engine.chat.endpoint import Endpoint, EndpointPool  # noqa: E402
from engine.runner import RetryPolicy, RolloutSpec, Runner  # noqa: E402
from engine.store import Store  # noqa: E402
from topologies.prompts import seed_bundle  # noqa: E402
from topologies.single import Single  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sim(delay_ms: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve-sim", "--tasks", "bfcl", "--port", str(port),
                             "--delay-ms", str(delay_ms)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    url = proc.stdout.readline().strip()
    return proc, url


async def run_once(url: str, specs: list[RolloutSpec], concurrency: int, record: bool, db: Path
                   ) -> tuple[float, float, int]:
    bench = get_benchmark("bfcl")
    async with AsyncExitStack() as stack:
        pool = EndpointPool([Endpoint(url, "simulated-policy", capacity=concurrency)])
        stack.push_async_callback(pool.aclose)
        store = await stack.enter_async_context(Store(db, run_id="bench"))
        await store.add_node(node_id="run", parent_id=None, instance_key="bench", task_key="job",
                             status="running", worker_key=None, level=0, actor="bench")
        runner = Runner(store=store, pool=pool, bench=bench, topology=Single(), run_node="run",
                        retry=RetryPolicy(), concurrency=concurrency, record_calls=record)
        decoding = OPTIMIZATION_DECODING
        t0, c0 = time.perf_counter(), time.process_time()
        records = await runner.run_batch(specs, decoding)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert all(r.status.usable for r in records), "bench rollouts must not fail"
    return wall, cpu, sum(r.usage.n_llm_calls for r in records)


def store_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rollouts", type=int, default=200)
    ap.add_argument("--delay-ms", type=int, default=100)
    args = ap.parse_args()
    bench = get_benchmark("bfcl")
    splits = bench.splits()
    ids = list(splits.train + splits.validation)[: args.rollouts]
    rows = bench.load_rows(ids)
    bundle: PromptBundle = seed_bundle("single", "bfcl", ["solver"])
    sim, url = start_sim(args.delay_ms)
    tmp = Path(tempfile.mkdtemp(prefix="mpb-bench-"))
    try:
        def specs(tag: str) -> list[RolloutSpec]:
            return [RolloutSpec(row=r, bundle=bundle, seed=i, phase="optimize", rollout_key=f"{tag}:{i}",
                                position=i) for i, r in enumerate(rows)]

        print(f"workload: {len(rows)} single-agent BFCL rollouts, simulated endpoint in a separate process, "
              f"{args.delay_ms} ms per response")
        w1, c1, n1 = anyio.run(run_once, url, specs("c1"), 1, True, tmp / "c1.sqlite")
        print(f"concurrency 1 : wall {w1:7.2f} s   engine CPU {c1:6.2f} s")
        w64, c64, n64 = anyio.run(run_once, url, specs("c64"), 64, True, tmp / "c64.sqlite")
        print(f"concurrency 64: wall {w64:7.2f} s   engine CPU {c64:6.2f} s")
        ideal = len(rows) / -(-len(rows) // 64)
        print(f"speedup 64 vs 1: {w1 / w64:.1f}x (target >= 30x; the critical path ceil({len(rows)}/64) x "
              f"{args.delay_ms} ms bounds it at {ideal:.0f}x)")
        print(f"engine CPU per 1,000 recorded calls: {1000 * c64 / n64:.2f} s ({1000 * c64 / n64:.2f} ms per call)")
        offs, ons = [], []
        for rep in range(5):  # interleaved repetitions; medians (the machine is noisy)
            offs.append(anyio.run(run_once, url, specs(f"off{rep}"), 64, False, tmp / f"off{rep}.sqlite")[:2])
            ons.append(anyio.run(run_once, url, specs(f"on{rep}"), 64, True, tmp / f"on{rep}.sqlite")[:2])
        woff, coff = (sorted(x)[2] for x in zip(*offs))
        won, con = (sorted(x)[2] for x in zip(*ons))
        print(f"recording off: wall {woff:.2f} s, CPU {coff:.2f} s; on: wall {won:.2f} s, CPU {con:.2f} s -> "
              f"recording costs {100 * (won / woff - 1):+.1f}% wall (medians of 5) (target <= +10%), "
              f"{100 * (con / coff - 1):+.1f}% CPU")
        sizes = []
        for n in (50, 100, 200):
            db = tmp / f"grow{n}.sqlite"
            anyio.run(run_once, url, specs(f"g{n}")[:n], 64, True, db)
            sizes.append((n, store_bytes(db)))
        print("store bytes per rollout: " + ", ".join(f"{n} rollouts -> {b / n:,.0f} B/rollout" for n, b in sizes))
    finally:
        sim.terminate()
        sim.communicate(timeout=10)  # reaps it and closes its pipe
    out = tmp / "job"
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/env", "python", "-m", "engine", "job", "--cell", "task=bfcl,topology=single",
                           "--method", "identity", "--seed", "0", "--out", str(out), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    n_rollouts = 150
    print(f"full identity job (150 rollouts, simulated endpoint in-process): exit {proc.returncode}, wall {wall:.1f} s,"
          f" peak RSS of the largest child {peak_mb:.0f} MB (target < 300 MB), store "
          f"{store_bytes(out / 'card.sqlite') / n_rollouts:,.0f} B/rollout")


if __name__ == "__main__":
    main()
