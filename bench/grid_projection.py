"""Projected task-model GPU-hours of the full 1,836-job grid: the reference layout vs this sweep.

Fed by real simulated jobs: for each topology (BFCL, table 3 / team size 4) one `gepa` job at the full 600-rollout
budget and one `identity` job run here against the simulated endpoint; their model-call counts (from the
endpoint's request log) give calls per job by topology, split into search calls and evaluation calls (identity =
the seed bundle's validation + test evaluations alone).

ASSUMPTIONS (each one stated, none measured here):
1-2. The throughput model of engine/sweep/projection.py (the one `sweep plan --endpoints N` uses): decode
   T(c) = T1 * c / (1 + a * (c - 1)) generated tokens/s at c concurrent sequences for a ~9B model on one GPU,
   calibrated on A100 40GB to a published vLLM concurrency sweep of Llama-3.1-8B-Instruct (johnmusgrave.com/p/
   vllm-throughput-latency-sweep-on): T1 = 75, a = 0.0303 (T(32) ~ 1,240, T(64) ~ 1,650 tok/s); prefill at 8,000
   tokens/s per GPU in both layouts. Qwen3.5-9B is taken as the same size class; a faster GPU (--gpu) scales both
   layouts alike and leaves the ratio unchanged.
3. Tokens per call: 1,500 prompt + 400 generated (engine/sweep/cost.py) for every call; the simulated endpoint's
   token counts are not a model's, so only its call counts are used.
4. Other methods (mipro, mapro, maspo, hivemind, ...) spend the same 600-rollout budget with gepa's calls per
   rollout; team size n scales calls per rollout as the topology's call formula (cost.py) relative to n = 4;
   every task costs like BFCL. Reflection calls run on the separate 122B endpoint and are not counted.
5. Reference layout: one process per job, one request in flight (its rollouts serialized), so its GPU runs at
   c = 1 while the job runs; every job runs its own seed-bundle evaluations.
6. This sweep: jobs packed on shared endpoints at c = --limit per GPU, busy --busy of the time (bench/sweep.py
   measures the mean in-flight / limit), each (condition, seed)'s seed-bundle evaluations run once.

usage: python bench/grid_projection.py [--limit 32] [--busy 0.9] [--gpu a100] [--budget 600]
(--budget below 600 is a smoke run: the figures are then not the grid's)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.sim.build import build_policy  # noqa: E402
from engine.sim.server import SimServer  # noqa: E402
from engine.sweep.cost import CALLS  # noqa: E402
from engine.sweep.endpoints import EndpointSpec  # noqa: E402
from engine.sweep.grid import protocol_grid  # noqa: E402
from engine.sweep.jobcall import JobSettings  # noqa: E402
from engine.sweep.local import run_local  # noqa: E402
from engine.sweep.plan import JobSpec  # noqa: E402
from engine.sweep.progress import Progress  # noqa: E402
from engine.sweep.projection import GPUS, GpuProfile, gpu_seconds, throughput  # noqa: E402
from engine.sweep.state import SweepState  # noqa: E402

TOPOLOGIES = ("single", "independent", "sequential", "centralized", "decentralized")


def measure_calls(tmp: Path, budget: int = 600) -> dict[tuple[str, str], int]:
    """Model calls of one simulated BFCL job per (method, topology), each alone (no shared evaluations)."""
    server = SimServer(build_policy(["bfcl"], None)).start()
    out: dict[tuple[str, str], int] = {}
    try:
        for topology in TOPOLOGIES:
            for method in ("identity", "gepa"):
                cell = f"task=bfcl,topology={topology},model=qwen"
                spec = JobSpec(method=method, cell=cell, seed=0, tables=(3,), registry_key=topology, runnable=True)
                root = tmp / f"{method}-{topology}"
                root.mkdir(parents=True)
                state = SweepState(root / "sweep.sqlite")
                state.add([spec])
                before = len(server.log)
                settings = JobSettings(budget=budget, allow_small_budget=budget < 600, model_id="sim",
                                       reflection_model="simulated-reflection")
                anyio.run(lambda: run_local([spec], root, state, settings,
                                            EndpointSpec((server.base_url,), server.base_url, 64), model_id="sim",
                                            max_jobs=1, job_retries=0, cache=None, startup_timeout=30,
                                            progress=Progress(1, quiet=True)))
                if state.rows()[0].status != "finished":
                    raise RuntimeError(f"{method}/{topology}: {state.rows()[0].error}")
                state.close()
                out[(method, topology)] = sum(1 for e in server.log[before:] if e.get("kind") == "answer")
    finally:
        server.stop()
    return out


def project(calls: dict[tuple[str, str], int], limit: int, busy: float,
            gpu: GpuProfile = GPUS["a100"]) -> dict[str, object]:
    ref_calls = sweep_calls = 0.0
    conditions: set[tuple[object, ...]] = set()
    for c in protocol_grid():
        scale = CALLS[c.topology](c.team_size) / CALLS[c.topology](4 if c.topology != "single" else 1)
        seed_evals = calls[("identity", c.topology)] * scale  # the seed bundle's validation + test
        own = (calls[("gepa", c.topology)] - calls[("identity", c.topology)]) * scale  # search + incumbent evals
        for seed in (0, 1, 2):
            ref_calls += own + seed_evals
            sweep_calls += own
            if (c.condition_key, seed) not in conditions:
                conditions.add((c.condition_key, seed))
                sweep_calls += seed_evals  # once per condition and seed, shared by every method
    ref_h = gpu_seconds(ref_calls, 1, gpu=gpu) / 3600
    sweep_h = gpu_seconds(sweep_calls, limit, busy, gpu) / 3600
    return {"jobs": 3 * len(protocol_grid()), "conditions_x_seeds": len(conditions),
            "model_calls_reference": round(ref_calls), "model_calls_sweep": round(sweep_calls),
            "tokens_per_s_at_c1": round(throughput(1, gpu), 1),
            f"tokens_per_s_at_c{limit}": round(throughput(limit, gpu), 1),
            "gpu_hours_reference": round(ref_h, 1), "gpu_hours_sweep": round(sweep_h, 1),
            "ratio": round(ref_h / sweep_h, 1), "busy_assumed": busy}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=32, help="in-flight requests per GPU in the sweep")
    ap.add_argument("--busy", type=float, default=0.9, help="fraction of time the sweep's GPUs are busy")
    ap.add_argument("--gpu", choices=tuple(GPUS), default="a100", help="GPU type of the throughput model")
    ap.add_argument("--budget", type=int, default=600, help="rollout budget of the measured gepa jobs (600: the "
                    "protocol's; smaller only for a smoke run)")
    args = ap.parse_args()
    calls = measure_calls(Path(tempfile.mkdtemp(prefix="bench-grid-")), args.budget)
    report = {"measured_calls_per_job": {f"{m}/{t}": n for (m, t), n in sorted(calls.items())},
              **project(calls, args.limit, args.busy, GPUS[args.gpu])}
    if args.gpu != "a100":
        report["gpu"] = args.gpu
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
