"""The sweep's packing: 24 jobs on 2 simulated endpoints (separate processes, 100 ms per call, limit 32 each).

Prints, for the local executor (all jobs in one process on one shared pool):
- mean in-flight / limit per endpoint over the sweep (sampled every 10 ms from each endpoint's limiter),
- wall time vs the sum of the same jobs run one at a time (each alone on the same two endpoints, limit 32),
- vs the reference layout: one process per job with serialized rollouts (one request in flight), projected from
  each job's model-call count times the per-call wall time measured by one serialized job run here,
- the engine's CPU seconds per model call (this process; the endpoints are other processes).
Figures only, no asserts. Jobs: BFCL, table 3, gepa + identity on single/independent/sequential/centralized,
seeds 0-2, budget 40 (--allow-small-budget).

usage: python bench/sweep.py [--delay-ms 100] [--limit 32] [--budget 40]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.chat.endpoint import EndpointPool  # noqa: E402
from engine.sweep.endpoints import EndpointSpec  # noqa: E402
from engine.sweep.evalcache import EvaluationCache  # noqa: E402
from engine.sweep.jobcall import JobSettings  # noqa: E402
from engine.sweep.local import run_local  # noqa: E402
from engine.sweep.plan import Filters, jobs_for, select  # noqa: E402
from engine.sweep.progress import Progress  # noqa: E402
from engine.sweep.state import SweepState  # noqa: E402

MODEL, REFLECTION = "sim-task-model", "simulated-reflection"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_sim(delay_ms: float, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve-sim", "--tasks", "bfcl", "--port", str(port),
                             "--delay-ms", str(delay_ms), "--log", str(log)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/v1"
        time.sleep(0.1)
    raise RuntimeError("simulated endpoint did not start")


class Sampler:
    def __init__(self, limit: int):
        self.limit, self.samples = limit, []  # type: list[list[float]]

    async def __call__(self, pool: EndpointPool) -> None:
        while True:
            self.samples.append([e.limiter.borrowed_tokens / self.limit for e in pool.endpoints])
            await anyio.sleep(0.01)

    def mean(self) -> list[float]:
        n = len(self.samples)
        return [sum(s[i] for s in self.samples) / n for i in range(len(self.samples[0]))] if n else []


def sweep(jobs: list[Any], root: Path, urls: list[str], limit: int, budget: int, observe: Any) -> float:
    settings = JobSettings(budget=budget, allow_small_budget=True, model_id=MODEL, reflection_model=REFLECTION,
                           concurrency=limit * len(urls))
    root.mkdir(parents=True, exist_ok=True)
    state = SweepState(root / "sweep.sqlite")
    state.add(jobs)
    started = time.perf_counter()
    anyio.run(lambda: run_local(jobs, root, state, settings, EndpointSpec(tuple(urls), urls[0], limit),
                                model_id=MODEL, max_jobs=len(jobs), job_retries=0,
                                cache=EvaluationCache(root / "evaluations"), startup_timeout=30,
                                progress=Progress(len(jobs), quiet=True), observe=observe))
    wall = time.perf_counter() - started
    bad = [r.key for r in state.rows() if r.status != "finished"]
    state.close()
    if bad:
        raise RuntimeError(f"jobs did not finish: {bad}")
    return wall


def calls_of(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if line.strip())


def serialized_wall(job: Any, url: str, budget: int, out: Path) -> float:
    """One job in its own process, one request in flight (the reference's way): its wall seconds."""
    before = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "engine", "job", "--cell", job.cell, "--method", job.method,
                           "--seed", str(job.seed), "--out", str(out), "--budget", str(budget),
                           "--allow-small-budget", "--concurrency", "1", "--task-endpoint", url, "--model-id", MODEL,
                           "--reflection-endpoint", url, "--reflection-model", REFLECTION, "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-500:])
    return time.perf_counter() - before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay-ms", type=float, default=100.0)
    ap.add_argument("--limit", type=int, default=32)
    ap.add_argument("--budget", type=int, default=40)
    args = ap.parse_args()
    f = Filters(tables=(3,), methods=("gepa", "identity"), tasks=("bfcl",),
                topologies=("single", "independent", "sequential", "centralized"))
    jobs = jobs_for(select(f), f.seeds, {})
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    sims = [start_sim(args.delay_ms, tmp / f"log{i}.jsonl") for i in range(2)]
    urls = [u for _, u in sims]
    try:
        sampler = Sampler(args.limit)
        cpu0 = time.process_time()
        wall = sweep(jobs, tmp / "packed", urls, args.limit, args.budget, sampler)
        cpu = time.process_time() - cpu0
        packed_calls = sum(calls_of(tmp / f"log{i}.jsonl") for i in range(2))
        alone, per_job_calls = 0.0, {}
        for job in jobs:
            before = sum(calls_of(tmp / f"log{i}.jsonl") for i in range(2))
            alone += sweep([job], tmp / "alone" / job.key.replace("/", "_"), urls, args.limit, args.budget, None)
            per_job_calls[job.key] = sum(calls_of(tmp / f"log{i}.jsonl") for i in range(2)) - before
        probe = next(j for j in jobs if j.method == "identity" and "single" in j.key)
        before = sum(calls_of(tmp / f"log{i}.jsonl") for i in range(2))
        serial_wall = serialized_wall(probe, urls[0], args.budget, tmp / "serial")
        serial_calls = sum(calls_of(tmp / f"log{i}.jsonl") for i in range(2)) - before
        per_call = serial_wall / max(1, serial_calls)
        ref_walls = [n * per_call for n in per_job_calls.values()]
    finally:
        for proc, _ in sims:
            proc.terminate()
            proc.wait()
    util = sampler.mean()
    report = {
        "jobs": len(jobs), "endpoints": 2, "delay_ms": args.delay_ms, "limit_per_endpoint": args.limit,
        "mean_inflight_over_limit_per_endpoint": [round(u, 3) for u in util],
        "packed_wall_s": round(wall, 2), "sum_of_jobs_one_at_a_time_s": round(alone, 2),
        "speedup_vs_one_at_a_time": round(alone / wall, 2),
        "reference_serialized_s_per_call": round(per_call, 4),
        "reference_one_process_per_job_all_parallel_wall_s": round(max(ref_walls), 2),
        "reference_one_process_per_job_one_at_a_time_s": round(sum(ref_walls), 2),
        "speedup_vs_reference_parallel_processes": round(max(ref_walls) / wall, 2),
        "speedup_vs_reference_sequential": round(sum(ref_walls) / wall, 2),
        "model_calls_packed": packed_calls, "model_calls_jobs_alone": sum(per_job_calls.values()),
        "engine_cpu_ms_per_call": round(1000 * cpu / max(1, packed_calls), 3),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
