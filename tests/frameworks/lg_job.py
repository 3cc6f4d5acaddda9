"""Run one LangGraph (or native) job on the simulated endpoint over a small slice of the real BFCL splits, in
this process or as a subprocess (the kill -9 resume test runs it that way).

usage: python -m tests.frameworks.lg_job OUT ENDPOINT CELL METHOD [BUDGET] [CONCURRENCY]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job, summary_line
from benchmarks.registry import get_benchmark
from core.benchmark import Benchmark, Splits
from engine.runner import RetryPolicy

REFLECTION_MODEL = "simulated-reflection"


def small_bfcl(n_train: int = 6, n_validation: int = 4, n_test: int = 6) -> Benchmark:
    """The real BFCL benchmark (bfcl-eval data, scorer, simulation) over the first rows of each of its splits."""
    bench = get_benchmark("bfcl")
    full = bench.splits()
    small = Splits(dataset=full.dataset, train=full.train[:n_train], validation=full.validation[:n_validation],
                   test=full.test[:n_test], eval_ids=full.test[:n_test], source=full.source)

    class SmallBfcl(type(bench)):  # type: ignore[misc]
        def splits(self) -> Splits:
            return small

    sliced: Benchmark = SmallBfcl.__new__(SmallBfcl)
    sliced.__dict__.update(bench.__dict__)
    return sliced


def config(out: Path, endpoint: str, cell: str, method: str, budget: int = 600, concurrency: int = 8,
           seed: int = 1, timeout: float = 30.0) -> JobConfig:
    cfg = build_config(cell=cell, method=method, seed=seed, out=str(out), budget=budget, task_endpoints=[endpoint],
                       model_id="simulated-policy", data_dir=None, concurrency=concurrency,
                       reflection_endpoint=endpoint, reflection_model=REFLECTION_MODEL, quiet=True,
                       request_timeout=timeout, allow_small_budget=budget < 600, allow_any_cell=True)
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})


def job(out: Path, endpoint: str, cell: str, method: str, **kw: Any) -> Any:
    return anyio.run(run_job, config(out, endpoint, cell, method, **kw), small_bfcl())


def run(out: Path, endpoint: str, cell: str, method: str, **kw: Any) -> dict[str, Any]:
    result: dict[str, Any] = job(out, endpoint, cell, method, **kw).to_json()
    return result


def main() -> None:
    out, endpoint, cell, method = sys.argv[1:5]
    budget = int(sys.argv[5]) if len(sys.argv) > 5 else 600
    concurrency = int(sys.argv[6]) if len(sys.argv) > 6 else 8
    result = job(Path(out), endpoint, cell, method, budget=budget, concurrency=concurrency)
    print(json.dumps(summary_line(result), sort_keys=True))


if __name__ == "__main__":
    main()
