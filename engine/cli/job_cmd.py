"""The `job` and `run` commands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import NoReturn

import anyio

from core.errors import UsageError
from core.protocol import FULL_BUDGET
from engine.cli.logging import configure_logging


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        raise UsageError(f"{self.prog}: {message}")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cell", required=True, help="task=...,topology=...[,framework=,communication=,team_size=,model=]")
    p.add_argument("--seed", type=int, default=0, help="optimizer / evaluation seed: 0, 1 or 2")
    p.add_argument("--task-endpoint", action="append", dest="task_endpoints", metavar="URL",
                   help="OpenAI-compatible base URL (repeatable, round robin; also TASK_ENDPOINTS). "
                        "Omitted: the built-in simulated endpoint")
    p.add_argument("--model-id", help="model id served by the task endpoint (also MODEL_ID)")
    p.add_argument("--data-dir", help="local dataset directory (else the dataset's environment variable)")
    p.add_argument("--concurrency", type=int, default=64, help="rollouts and requests in flight per endpoint")
    p.add_argument("--request-timeout", type=float, default=1200.0, help="read timeout per model call, seconds")
    p.add_argument("--max-outage", type=float, default=900.0, metavar="SECONDS",
                   help="how long the job waits while no task endpoint is healthy before rollouts fail "
                        "(default 900 = 15 min); waits are not rollout attempts and are recorded in the card")
    p.add_argument("--quiet", action="store_true")


def job_main(argv: list[str]) -> int:
    p = _Parser(prog="python -m engine job", description="Run one mas-promptbench-v1 job.")
    _common(p)
    p.add_argument("--method", required=True, help="optimizer name (e.g. identity, gepa, mipro)")
    p.add_argument("--out", required=True, help="job directory (re-run the same command to resume)")
    p.add_argument("--budget", type=int, default=FULL_BUDGET, help="usable rollouts, 1..600 (600 = conformant)")
    p.add_argument("--reflection-endpoint", help="reflection model base URL (also REFLECTION_MODEL_BASE_URL)")
    p.add_argument("--reflection-model", help="reflection model id (also REFLECTION_MODEL_ID)")
    p.add_argument("--allow-small-budget", action="store_true",
                   help="proceed with a budget below the method's smallest useful budget")
    args = p.parse_args(argv)
    configure_logging(args.quiet)
    from engine.job.config import build_config
    from engine.job.run_job import run_job, summary_line

    cfg = build_config(cell=args.cell, method=args.method, seed=args.seed, out=args.out, budget=args.budget,
                       task_endpoints=args.task_endpoints, model_id=args.model_id, data_dir=args.data_dir,
                       concurrency=args.concurrency, reflection_endpoint=args.reflection_endpoint,
                       reflection_model=args.reflection_model, allow_small_budget=args.allow_small_budget,
                       quiet=args.quiet, request_timeout=args.request_timeout, max_outage=args.max_outage)
    result = anyio.run(run_job, cfg)
    print(json.dumps(summary_line(result), sort_keys=True))
    return 0


def run_main(argv: list[str]) -> int:
    p = _Parser(prog="python -m engine run", description="Baseline run of one bundle on a split, recorded.")
    _common(p)
    p.add_argument("--split", default="test", choices=["train", "validation", "test"])
    p.add_argument("--only", nargs="+", metavar="ID", help="run only these example IDs (in this order)")
    p.add_argument("--limit", type=int, help="run only the first N IDs of the split")
    p.add_argument("--bundle", help="bundle JSON file (default: the seed bundle of the cell)")
    p.add_argument("--out", required=True, help="predictions JSONL; the store is written beside it")
    args = p.parse_args(argv)
    configure_logging(args.quiet)
    from engine.cli.baseline import run_baseline

    summary = anyio.run(run_baseline, args)
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(job_main(sys.argv[1:]))
