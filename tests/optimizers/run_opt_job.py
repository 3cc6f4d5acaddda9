"""Run one optimizer job on the fake benchmark in a subprocess, reflection served by the same endpoint
(used by the kill -9 resume tests).

usage: python -m tests.optimizers.run_opt_job OUT ENDPOINT METHOD [CONCURRENCY]
"""

import json
import sys
from pathlib import Path

import anyio

from engine.job.run_job import run_job, summary_line
from tests.optimizers.optjob import bench, config


def main() -> None:
    out, endpoint, method = sys.argv[1], sys.argv[2], sys.argv[3]
    concurrency = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    cfg = config(Path(out), endpoint, method=method, concurrency=concurrency)
    result = anyio.run(run_job, cfg, bench())
    print(json.dumps(summary_line(result), sort_keys=True))


if __name__ == "__main__":
    main()
