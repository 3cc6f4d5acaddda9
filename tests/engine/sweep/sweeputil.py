"""Helpers for sweep tests: simulated BFCL endpoints, the 12-job selection, running `sweep` as a subprocess and the
same jobs one by one in this process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from engine.job.config import build_config
from engine.job.run_job import run_job
from engine.sim.build import build_policy
from engine.sim.server import SimServer

ROOT = Path(__file__).resolve().parents[3]
SELECTION = ["--runtime", "native", "--tasks", "bfcl", "--table", "3", "--methods", "gepa,identity", "--topologies", "single,independent",
             "--budget", "20", "--allow-small-budget"]
MODEL, REFLECTION = "sim-task-model", "simulated-reflection"


def as_in_a_terminal() -> None:
    """`preexec_fn` of a sweep that a test interrupts as a terminal's Ctrl-C does: a foreground process starts with
    SIGINT at its default. One started with SIGINT ignored (by a script's `cmd &`, as a background CI launcher
    does) keeps ignoring it, as POSIX and Python say; the sweep then rightly runs on, so the test sets the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_servers(n: int, delay_s: float = 0.0) -> list[SimServer]:
    policy = build_policy(["bfcl"], None)
    return [SimServer(policy, delay_s=delay_s).start() for _ in range(n)]


def endpoint_args(servers: list[SimServer]) -> list[str]:
    args = []
    for s in servers:
        args += ["--task-endpoint", s.base_url]
    return args + ["--model-id", MODEL, "--reflection-endpoint", servers[0].base_url, "--reflection-model",
                   REFLECTION]


def sweep(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", "sweep", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})


def plan_keys(*selection: str) -> list[dict[str, Any]]:
    proc = sweep("plan", *selection, "--json")
    assert proc.returncode == 0, proc.stderr
    return [j for j in json.loads(proc.stdout)["jobs"]]


def run_one_by_one(jobs: list[dict[str, Any]], out: Path, server: SimServer) -> dict[str, list[dict[str, Any]]]:
    """Each job alone (its own pool, no shared evaluations); returns each job's slice of the request log."""
    slices = {}
    for j in jobs:
        before = len(server.log)
        cfg = build_config(cell=j["cell"], method=j["method"], seed=j["seed"], out=str(out / j["key"]), budget=20,
                           task_endpoints=[server.base_url], model_id=MODEL, data_dir=None, concurrency=32,
                           reflection_endpoint=server.base_url, reflection_model=REFLECTION,
                           allow_small_budget=True, quiet=True)
        anyio.run(run_job, cfg)
        slices[j["key"]] = server.log[before:]
    return slices


def model_requests(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Requests of jobs (the start-up check's 1-token probe excluded)."""
    return [e for e in entries if e.get("kind") not in (None, "no_match")]


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(result))
    out["optimization"].pop("elapsed_seconds", None)
    return out


def results(root: Path, keys: list[str]) -> dict[str, dict[str, Any]]:
    return {k: comparable(json.loads((root / k / "result.json").read_text())) for k in keys}


def duplicates(entries: list[dict[str, Any]]) -> Counter[str]:
    counts = Counter(e["key"] for e in model_requests(entries))
    return Counter({k: n for k, n in counts.items() if n > 1})
