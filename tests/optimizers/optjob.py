"""Helpers for optimizer job tests: a job on the fake benchmark whose reflection model is the simulated endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job
from engine.runner import RetryPolicy
from tests.fakebench import FakeBench

REFLECTION_MODEL = "simulated-reflection"


def bench() -> FakeBench:
    return FakeBench(n_train=12, n_validation=20, n_test=30)


def config(out: Path, endpoint: str, *, method: str, seed: int = 1, budget: int = 600, concurrency: int = 8,
           allow_small_budget: bool = False, timeout: float = 5.0, allow_any_cell: bool = False,
           phase: str = "all", cell: str = "task=gpqa,topology=single") -> JobConfig:
    cfg = build_config(cell=cell, method=method, seed=seed, out=str(out), budget=budget,
                       task_endpoints=[endpoint], model_id="test-model", data_dir=None, concurrency=concurrency,
                       reflection_endpoint=endpoint, reflection_model=REFLECTION_MODEL,
                       allow_small_budget=allow_small_budget, quiet=True, request_timeout=timeout,
                       allow_any_cell=allow_any_cell, phase=phase)
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})


def run(out: Path, endpoint: str, fake: FakeBench | None = None, **kw: Any) -> dict[str, Any]:
    return anyio.run(run_job, config(out, endpoint, **kw), fake or bench()).to_json()


def read(out: Path, name: str) -> Any:
    path = out / name
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in path.read_text().splitlines() if line]
    return json.loads(path.read_text())
