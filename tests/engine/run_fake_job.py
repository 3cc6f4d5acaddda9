"""Run one job against the fake benchmark in a subprocess (used by the kill -9 resume tests).

usage: python -m tests.engine.run_fake_job OUT ENDPOINT [METHOD] [CONCURRENCY]
"""

import json
import sys

import anyio

from engine.job.config import build_config
from engine.job.run_job import run_job, summary_line
from engine.runner import RetryPolicy
from tests.fakebench import FakeBench


def main() -> None:
    out, endpoint = sys.argv[1], sys.argv[2]
    method = sys.argv[3] if len(sys.argv) > 3 else "identity"
    concurrency = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    cfg = build_config(cell="task=gpqa,topology=single", method=method, seed=1, out=out, budget=600,
                       task_endpoints=[endpoint], model_id="test-model", data_dir=None, concurrency=concurrency,
                       quiet=True, request_timeout=2.0)
    cfg = type(cfg)(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})
    result = anyio.run(run_job, cfg, FakeBench(n_train=12, n_validation=20, n_test=30))
    print(json.dumps(summary_line(result), sort_keys=True))


if __name__ == "__main__":
    main()
