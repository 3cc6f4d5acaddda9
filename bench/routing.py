"""Cache-aware routing against least-loaded: the same jobs of multi-turn cells on 4 simulated endpoints.

Cells: ToolHop single, decentralized debate (4 peers) and centralized (manager + 4 workers); methods gepa and
identity; seeds 0..N-1 (--seeds). Each routing runs every job at once through one EndpointPool over 4 fresh
simulated endpoints (separate processes, each with an empty prefix cache of --cache-tokens tokens, engine/sim/
prefix_cache.py; --delay-ms per call; --limit in flight each) and the same reflection endpoint. Prints, per
routing: prefill tokens computed and cached (summed over the 4 endpoints' own counters, GET /v1/prefix_cache),
mean in-flight / limit per endpoint (sampled every 10 ms from each endpoint's limiter), wall seconds; then the
reduction in prefill computed (target >= 40%) and whether every job's results (result.json, selection.json, and
each rollout's score) are identical under both routings. Figures only, no asserts.

Data: a synthetic ToolHop.json shaped like bytedance-research/ToolHop (every split ID; the simulated model calls no
tools on ToolHop, so no dataset code runs), written to a temporary directory.

usage: python bench/routing.py [--tiny] [--seeds 2] [--smoke 6] [--delay-ms 50] [--limit 8] [--cache-tokens N]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts  # noqa: E402
from engine.chat.routing import DEFAULT_EPS, CacheAware  # noqa: E402
from engine.sweep.jobcall import JobSettings, run_spec  # noqa: E402
from engine.sweep.plan import JobSpec  # noqa: E402

MODEL, REFLECTION = "sim-task-model", "simulated-reflection"
CELLS = {"single": "task=toolhop,topology=single", "decentralized": "task=toolhop,topology=decentralized,team_size=4",
         "centralized": "task=toolhop,topology=centralized,team_size=4"}
ROUTINGS = ("least-loaded", "cache-aware")
VOLATILE = ("_at", "_seconds", "_s")  # key suffixes of times, which differ between any two runs


def toolhop_data(directory: Path) -> str:
    """A ToolHop.json with every split ID of the benchmark (synthetic questions, answers and tools)."""
    from benchmarks.registry import get_benchmark
    from engine.sim.build import all_split_ids

    rows = []
    for n, row_id in enumerate(all_split_ids(get_benchmark("toolhop"))):
        city, year = f"City{n % 97}", 1900 + n % 120
        tools = {f"hop{k}_lookup": {"name": f"hop{k}_lookup", "description": f"Hop {k}: look up the next entity "
                                    f"of chain {row_id} ({'person, place, date'.split(', ')[k % 3]}).",
                                    "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                                                   "required": ["query"]}} for k in range(3)}
        functions = [f"def hop{k}_lookup(query: str) -> str:\n    return {f'{city}-{k}'!r}\n" for k in range(3)]
        question = (f"Chain {row_id}: find the film whose director was born in {city}, then the composer of its "
                    f"score, then the year that composer's first symphony premiered. Each hop depends on the "
                    f"previous answer; check every intermediate entity against the tool output before moving on.")
        rows.append({"id": int(row_id), "question": question, "answer": str(year), "tools": tools,
                     "functions": functions})
    (directory / "data").mkdir(parents=True, exist_ok=True)
    (directory / "data" / "ToolHop.json").write_text(json.dumps(rows), encoding="utf-8")
    return str(directory)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_sims(n: int, data_dir: str, delay_ms: float, cache_tokens: int,
               pad_bytes: int) -> list[tuple[subprocess.Popen[bytes], str]]:
    sims = []
    for _ in range(n):
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "engine", "serve-sim", "--tasks", "toolhop", "--port",
                                 str(port), "--data-dir", data_dir, "--delay-ms", str(delay_ms),
                                 "--prefix-cache-tokens", str(cache_tokens), "--pad-bytes", str(pad_bytes)], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        sims.append((proc, f"http://127.0.0.1:{port}/v1"))
    deadline = time.monotonic() + 60
    for _, url in sims:
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("a simulated endpoint did not start")
    return sims


def cache_stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/prefix_cache", timeout=5) as resp:
        return dict(json.loads(resp.read()))


def jobs(seeds: int) -> list[JobSpec]:
    return [JobSpec(method=m, cell=cell, seed=s, tables=(), registry_key=key, runnable=True, allow_any_cell=True)
            for key, cell in CELLS.items() for m in ("gepa", "identity") for s in range(seeds)]


async def run_all(specs: list[JobSpec], runs: Path, settings: JobSettings, urls: list[str], reflection_url: str,
                  limit: int, routing: str, eps: float) -> tuple[list[list[float]], dict[str, int]]:
    endpoints = [Endpoint(u, MODEL, capacity=limit, timeouts=Timeouts(read=120)) for u in urls]
    pool = EndpointPool(endpoints, routing=CacheAware(endpoints, eps=eps) if routing == CacheAware.name else routing)
    reflection = EndpointPool([Endpoint(reflection_url, REFLECTION, capacity=limit, timeouts=Timeouts(read=120))])
    samples: list[list[float]] = []

    async def sample() -> None:
        while True:
            samples.append([e.limiter.borrowed_tokens / limit for e in pool.endpoints])
            await anyio.sleep(0.01)

    try:
        async with anyio.create_task_group() as outer:
            outer.start_soon(sample)
            async with anyio.create_task_group() as tg:
                for spec in specs:
                    tg.start_soon(run_spec, spec, runs, settings, pool, reflection, None)
            outer.cancel_scope.cancel()
    finally:
        await pool.aclose()
        await reflection.aclose()
    return samples, dict(getattr(pool.router, "counts", {}))


def busy_mean(samples: list[list[float]]) -> list[float]:
    """Mean in-flight / limit per endpoint over the samples while any request was in flight."""
    busy = [s for s in samples if any(s)]
    return [round(sum(s[i] for s in busy) / len(busy), 3) for i in range(len(busy[0]))] if busy else []


def strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if not k.endswith(VOLATILE) and k != "out"}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def results(runs: Path, specs: list[JobSpec]) -> dict[str, Any]:
    """Per job: result.json and selection.json (times dropped) and every rollout's (node, status, score)."""
    out: dict[str, Any] = {}
    for spec in specs:
        job = runs / spec.key
        files = {name: strip(json.loads((job / name).read_text())) for name in ("result.json", "selection.json")
                 if (job / name).is_file()}
        conn = sqlite3.connect(str(job / "card.sqlite"))
        try:
            scores = conn.execute("SELECT target_id, payload FROM annotations WHERE namespace = 'mpb.score' "
                                  "ORDER BY target_id, sequence").fetchall()
        finally:
            conn.close()
        out[spec.key] = {**files, "scores": scores}
    return out


def one_routing(routing: str, specs: list[JobSpec], args: argparse.Namespace, data_dir: str,
                tmp: Path) -> dict[str, Any]:
    # 4 task endpoints and the reflection one, fresh (empty caches) for each routing
    sims = start_sims(5, data_dir, args.delay_ms, args.cache_tokens, args.pad_bytes)
    urls, reflection_url = [u for _, u in sims[:4]], sims[4][1]
    settings = JobSettings(budget=args.budget, allow_small_budget=True, model_id=MODEL, reflection_model=REFLECTION,
                           concurrency=args.limit * 4, smoke=args.smoke, dataset_options={})
    runs = tmp / routing
    try:
        started = time.perf_counter()
        samples, counts = anyio.run(run_all, specs, runs, settings, urls, reflection_url, args.limit, routing,
                                    args.eps)
        wall = time.perf_counter() - started
        stats = [cache_stats(u) for u in urls]
    finally:
        for proc, _ in sims:
            proc.terminate()
            proc.wait()
    util = busy_mean(samples)
    return {"prefill_tokens_computed": sum(s["computed_tokens"] for s in stats),
            "prefill_tokens_cached": sum(s["cached_tokens"] for s in stats),
            "prompt_tokens": sum(s["prompt_tokens"] for s in stats),
            "requests_per_endpoint": [s["requests"] for s in stats],
            "mean_inflight_over_limit_per_endpoint": util,
            "mean_inflight_over_limit": round(sum(util) / len(util), 3) if util else None,
            "wall_s": round(wall, 2), **({"choices": counts} if counts else {}), "results": results(runs, specs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="1 seed, 2 rows per split, 10 ms per call (a smoke run)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--smoke", type=int, default=6, help="rows per split of every job (engine/job/smoke.py)")
    ap.add_argument("--budget", type=int, default=600)
    ap.add_argument("--delay-ms", type=float, default=50.0)
    ap.add_argument("--limit", type=int, default=8, help="in-flight limit per endpoint")
    ap.add_argument("--cache-tokens", type=int, default=1 << 18, help="prefix cache per endpoint, tokens")
    ap.add_argument("--pad-bytes", type=int, default=2000,
                    help="every task answer this many bytes longer (default 2000: ~500 tokens, a real reply's length)")
    ap.add_argument("--eps", type=float, default=DEFAULT_EPS, help="cache-aware routing's load bound: 1 + eps")
    args = ap.parse_args()
    if args.tiny:
        args.seeds, args.smoke, args.delay_ms = 1, 2, 10.0
    specs = jobs(args.seeds)
    tmp = Path(tempfile.mkdtemp(prefix="bench-routing-"))
    data_dir = toolhop_data(tmp / "toolhop")
    os.environ["TOOLHOP_DATA_DIR"] = data_dir
    figures = {r: one_routing(r, specs, args, data_dir, tmp) for r in ROUTINGS}
    base, aware = figures["least-loaded"], figures["cache-aware"]
    same = base.pop("results") == aware.pop("results")
    reduction = 1 - aware["prefill_tokens_computed"] / max(1, base["prefill_tokens_computed"])
    print(json.dumps({"jobs": len(specs), "cells": list(CELLS), "endpoints": 4, "limit_per_endpoint": args.limit,
                      "delay_ms": args.delay_ms, "cache_tokens_per_endpoint": args.cache_tokens, "smoke": args.smoke,
                      "pad_bytes": args.pad_bytes, **{f"{r}": figures[r] for r in ROUTINGS},
                      "prefill_computed_reduction": round(reduction, 3), "results_identical": same}, indent=2))
    print(f"prefill tokens computed: least-loaded {base['prefill_tokens_computed']}, cache-aware "
          f"{aware['prefill_tokens_computed']}: {100 * reduction:.1f}% fewer (target >= 40%)")
    print(f"prefill tokens cached: least-loaded {base['prefill_tokens_cached']}, cache-aware "
          f"{aware['prefill_tokens_cached']}")
    print(f"mean in-flight / limit: least-loaded {base['mean_inflight_over_limit']}, cache-aware "
          f"{aware['mean_inflight_over_limit']} (target >= 0.90)")
    print(f"wall: least-loaded {base['wall_s']} s, cache-aware {aware['wall_s']} s")
    print(f"results identical (result.json, selection.json, every rollout's score): {same}")


if __name__ == "__main__":
    main()
