"""Centralized jobs on the AutoGen runtime against a given (simulated) endpoint: BFCL in-process via `run`; the
small gpqa-like fake benchmark as a subprocess (the kill -9 resume test):

    python -m tests.frameworks.auto_job OUT ENDPOINT METHOD BUDGET
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job, summary_line
from engine.runner import RetryPolicy
from tests.engine import jobutil
from tests.engine.faults.matrix import small_bench

CELL = "task=bfcl,topology=centralized,framework=autogen"
SMALL_CELL = "task=gpqa,topology=centralized,framework=autogen"
REFLECTION_MODEL = "simulated-reflection"
CONCURRENCY = 4


def config(out: Path, endpoint: str, method: str, budget: int, timeout: float = 30.0) -> JobConfig:
    cfg = build_config(cell=CELL, method=method, seed=2, out=str(out), budget=budget, task_endpoints=[endpoint],
                       model_id="simulated-policy", data_dir=None, concurrency=CONCURRENCY,
                       reflection_endpoint=endpoint, reflection_model=REFLECTION_MODEL, quiet=True,
                       request_timeout=timeout, allow_small_budget=budget < 600)
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})


def run(out: Path, endpoint: str, method: str = "identity", budget: int = 600, **kw: Any) -> dict[str, Any]:
    result: dict[str, Any] = anyio.run(run_job, config(out, endpoint, method, budget, **kw)).to_json()
    return result


def small_config(out: Path, endpoint: str, method: str, budget: int) -> JobConfig:
    return jobutil.config(out, endpoint, method=method, budget=budget, concurrency=CONCURRENCY, timeout=30.0,
                          cell=SMALL_CELL)


def main() -> None:
    out, endpoint, method, budget = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    result = anyio.run(run_job, small_config(Path(out), endpoint, method, budget), small_bench())
    print(json.dumps(summary_line(result), sort_keys=True))


if __name__ == "__main__":
    main()
