"""The sweep's packing: 24 jobs on 2 simulated task endpoints (+1 reflection endpoint; separate processes, 100 ms
per call, limit 32 each), on `--runtime frameworks|native` with `--workers N` processes (default: the CPU count).

Prints (JSON), figures only, no asserts:
- the runtime the jobs ran on (their cells' framework: `langgraph` under frameworks, `native` under native),
- mean in-flight / limit per task endpoint over the packed sweep, and the most in flight, by the endpoints' own
  count (GET /v1/concurrency, engine/sim/concurrency.py),
- packed wall vs the endpoint-bound FLOOR (bench/floor.py: no sooner than the longest job's own chain floor, each
  job's model calls in rollout batches scheduled LPT on its slots as bench/optimizer.py computes it, measured by
  running it alone; nor than the packed sweep's calls on the endpoints' slots at one delay each),
- vs the sum of the same jobs run one at a time (each alone on the same endpoints, in this process),
- vs the reference layout: one process per job with serialized rollouts (one request in flight), projected from
  each job's model-call count times the per-call wall time measured by one serialized job run here,
- engine CPU per model call of the packed sweep: this process plus its worker processes (their resource usage as
  children; the endpoints are other processes, not counted), per endpoint request and per recorded call (the calls
  the jobs' cards hold: those the endpoints answered plus those the shared evaluations answered, which cost the
  engine a whole rollout but no request; counted as the same jobs' requests when each runs alone),
- the node's CPU: the simulated endpoints' own CPU seconds (/proc) and the share of the node's cores busy with
  the engine and the endpoints over the packed wall (near 1: the sweep is CPU-bound, not slot-bound).
Jobs: BFCL, table 3, gepa + identity on single/independent/sequential/centralized, seeds 0-2, budget 40
(--allow-small-budget). `--tiny`: single/independent, seed 0, budget 20, 20 ms per call, limit 8 (smoke test).

usage: python bench/sweep.py [--runtime frameworks|native] [--workers N] [--delay-ms 100] [--limit 32]
                             [--budget 40] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.floor import Floor, count_jobs_into, sweep_floor  # noqa: E402
from engine.sweep.endpoints import EndpointSpec  # noqa: E402
from engine.sweep.evalcache import EvaluationCache  # noqa: E402
from engine.sweep.jobcall import JobSettings  # noqa: E402
from engine.sweep.local import run_local  # noqa: E402
from engine.sweep.plan import Filters, JobSpec, jobs_for, select  # noqa: E402
from engine.sweep.progress import Progress  # noqa: E402
from engine.sweep.state import SweepState  # noqa: E402
from engine.sweep.workers import run_workers  # noqa: E402

MODEL, REFLECTION = "sim-task-model", "simulated-reflection"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def start_sim(delay_ms: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve-sim", "--tasks", "bfcl", "--port", "0",
                             "--delay-ms", str(delay_ms)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=ENV)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        raise RuntimeError(f"simulated endpoint did not start (exit code {proc.wait()})")
    return proc, url


def concurrency(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/concurrency", timeout=30) as resp:
        return dict(json.loads(resp.read()))


def process_cpu(pid: int) -> float:
    """A process's CPU seconds so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def sweep(jobs: list[JobSpec], root: Path, urls: list[str], reflection: str, args: argparse.Namespace,
          workers: int) -> float:
    settings = JobSettings(budget=args.budget, allow_small_budget=True, model_id=MODEL, reflection_model=REFLECTION,
                           concurrency=args.limit * len(urls))
    root.mkdir(parents=True, exist_ok=True)
    state = SweepState(root / "sweep.sqlite")
    state.add(jobs)
    common: dict[str, Any] = {"model_id": MODEL, "max_jobs": len(jobs), "job_retries": 0, "startup_timeout": 60,
                              "cache": EvaluationCache(root / "evaluations"), "progress": Progress(len(jobs), quiet=True)}
    endpoints = EndpointSpec(tuple(urls), reflection, args.limit)
    started = time.perf_counter()
    if workers > 1:
        anyio.run(lambda: run_workers(jobs, root, state, settings, endpoints, workers=workers, **common))
    else:
        anyio.run(lambda: run_local(jobs, root, state, settings, endpoints, **common))
    wall = time.perf_counter() - started
    bad = [r.key for r in state.rows() if r.status != "finished"]
    state.close()
    if bad:
        raise RuntimeError(f"jobs did not finish: {bad}")
    return wall


def serialized_wall(job: JobSpec, url: str, reflection: str, budget: int, out: Path) -> float:
    """One job in its own process, one request in flight (the reference's way): its wall seconds."""
    before = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "engine", "job", "--cell", job.cell, "--method", job.method,
                           "--seed", str(job.seed), "--out", str(out), "--budget", str(budget),
                           "--allow-small-budget", "--concurrency", "1", "--task-endpoint", url, "--model-id", MODEL,
                           "--reflection-endpoint", reflection, "--reflection-model", REFLECTION, "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, env=ENV)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-500:])
    return time.perf_counter() - before


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runtime", choices=("frameworks", "native"), default="frameworks")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--delay-ms", type=float, default=None)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--budget", type=int, default=None)
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args()
    for name, full, tiny in (("delay_ms", 100.0, 20.0), ("limit", 32, 8), ("budget", 40, 20)):
        if getattr(args, name) is None:
            setattr(args, name, tiny if args.tiny else full)
    if args.workers < 1:
        ap.error("--workers must be at least 1")
    return args


def plan(args: argparse.Namespace) -> list[JobSpec]:
    topologies = ("single", "independent") if args.tiny else ("single", "independent", "sequential", "centralized")
    f = Filters(tables=(3,), methods=("gepa", "identity"), tasks=("bfcl",), topologies=topologies,
                seeds=(0,) if args.tiny else (0, 1, 2), runtime=args.runtime)
    jobs = [j for j in jobs_for(select(f), f.seeds, {}, f.runtime) if j.runnable]
    if not jobs:
        raise SystemExit(f"bench/sweep.py: no runnable job under --runtime {args.runtime} (missing extras?)")
    return jobs


def main() -> None:
    args = parse_args()
    jobs = plan(args)
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    sims = [start_sim(args.delay_ms) for _ in range(3)]
    urls, reflection = [u for _, u in sims[:2]], sims[2][1]
    delay = args.delay_ms / 1000
    try:
        before = [concurrency(u) for u in urls + [reflection]]
        cpu0, kids0, sims0 = time.process_time(), children_cpu(), sum(process_cpu(p.pid) for p, _ in sims)
        wall = sweep(jobs, tmp / "packed", urls, reflection, args, args.workers)
        cpu_parent, cpu_workers = time.process_time() - cpu0, children_cpu() - kids0
        cpu_sims = sum(process_cpu(p.pid) for p, _ in sims) - sims0
        after = [concurrency(u) for u in urls + [reflection]]
        calls = [a["requests"] - b["requests"] for a, b in zip(after, before)]
        util = [(a["area"] - b["area"]) / (a["clock"] - b["clock"]) / args.limit for a, b in zip(after, before)]
        floor = Floor(delay, args.limit * len(urls))
        count_jobs_into(floor)
        alone, job_floors, per_job_calls = 0.0, [], {}
        for job in jobs:
            seen, floor0 = sum(concurrency(u)["requests"] for u in urls + [reflection]), floor.seconds
            alone += sweep([job], tmp / "alone" / job.key.replace("/", "_"), urls, reflection, args, 1)
            job_floors.append(floor.seconds - floor0)
            per_job_calls[job.key] = sum(concurrency(u)["requests"] for u in urls + [reflection]) - seen
        probe = next(j for j in jobs if j.method == "identity" and "single" in j.key)
        seen = sum(concurrency(u)["requests"] for u in urls + [reflection])
        serial_wall = serialized_wall(probe, urls[0], reflection, args.budget, tmp / "serial")
        per_call = serial_wall / max(1, sum(concurrency(u)["requests"] for u in urls + [reflection]) - seen)
        ref_walls = [n * per_call for n in per_job_calls.values()]
    finally:
        for proc, _ in sims:
            proc.terminate()
            proc.wait()
    bound, chain, throughput = sweep_floor(job_floors, [(sum(calls[:2]), 2 * args.limit), (calls[2], args.limit)],
                                           delay)
    report = {
        "runtime": args.runtime, "job_frameworks": dict(Counter(j.framework for j in jobs)), "workers": args.workers,
        "jobs": len(jobs), "task_endpoints": len(urls), "delay_ms": args.delay_ms, "limit_per_endpoint": args.limit,
        "mean_inflight_over_limit_per_endpoint": [round(u, 3) for u in util[:2]],
        "max_inflight_per_endpoint": [a["max_in_flight"] for a in after[:2]],
        "reflection_endpoint_mean_inflight_over_limit": round(util[2], 3),
        "packed_wall_s": round(wall, 2),
        "floor_s": round(bound, 2), "floor_longest_job_chain_s": round(chain, 2),
        "floor_endpoint_throughput_s": round(throughput, 2), "packed_wall_over_floor": round(wall / bound, 2),
        "sum_of_jobs_one_at_a_time_s": round(alone, 2), "speedup_vs_one_at_a_time": round(alone / wall, 2),
        "reference_serialized_s_per_call": round(per_call, 4),
        "reference_one_process_per_job_all_parallel_wall_s": round(max(ref_walls), 2),
        "reference_one_process_per_job_one_at_a_time_s": round(sum(ref_walls), 2),
        "speedup_vs_reference_parallel_processes": round(max(ref_walls) / wall, 2),
        "speedup_vs_reference_sequential": round(sum(ref_walls) / wall, 2),
        "model_calls_packed": sum(calls), "model_calls_jobs_alone": sum(per_job_calls.values()),
        "engine_cpu_s_parent": round(cpu_parent, 2), "engine_cpu_s_workers": round(cpu_workers, 2),
        "engine_cpu_ms_per_call": round(1000 * (cpu_parent + cpu_workers) / max(1, sum(calls)), 3),
        "engine_cpu_ms_per_recorded_call": round(1000 * (cpu_parent + cpu_workers)
                                                 / max(1, sum(per_job_calls.values())), 3),
        "endpoint_processes_cpu_s": round(cpu_sims, 2),
        "node_cpu_busy_fraction": round((cpu_parent + cpu_workers + cpu_sims) / (wall * (os.cpu_count() or 1)), 2),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
