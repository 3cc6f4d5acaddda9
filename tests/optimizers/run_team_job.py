"""Run a MAPRO / MASPO job on BFCL with a 4-agent sequential team against a given simulated endpoint, in a
subprocess (used by the kill -9 resume tests; judge, probe and reflection calls go to the same server).

usage: python -m tests.optimizers.run_team_job OUT ENDPOINT METHOD [CONCURRENCY] [CELL]
(CELL: default the 4-agent sequential BFCL team)
"""

import json
import sys
from pathlib import Path

import anyio

from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job, summary_line
from engine.runner import RetryPolicy

REFLECTION_MODEL = "simulated-reflection"


SEQUENTIAL = "task=bfcl,topology=sequential,team_size=4"


def config(out: Path, endpoint: str, method: str, concurrency: int, cell: str = SEQUENTIAL) -> JobConfig:
    cfg = build_config(cell=cell, method=method, seed=2, out=str(out),
                       budget=600, task_endpoints=[endpoint], model_id="simulated-policy", data_dir=None,
                       concurrency=concurrency, reflection_endpoint=endpoint, reflection_model=REFLECTION_MODEL,
                       quiet=True, request_timeout=30.0)
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})


def main() -> None:
    out, endpoint, method = sys.argv[1], sys.argv[2], sys.argv[3]
    concurrency = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    cell = sys.argv[5] if len(sys.argv) > 5 else SEQUENTIAL
    result = anyio.run(run_job, config(Path(out), endpoint, method, concurrency, cell))
    print(json.dumps(summary_line(result), sort_keys=True))


if __name__ == "__main__":
    main()
