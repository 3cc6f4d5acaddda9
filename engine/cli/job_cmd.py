"""The `job` and `run` commands. Every option is validated before anything is written (engine/args.py)."""

from __future__ import annotations

import argparse
import json
import sys

import anyio

from core.errors import UsageError
from core.protocol import FULL_BUDGET
from engine.chat.auth import DEFAULT_API_KEY_ENV, DEFAULT_REFLECTION_API_KEY_ENV
from engine.chat.preflight import DEFAULT_STARTUP_TIMEOUT_S
from engine.chat.routing import ROUTINGS, check_routing, default_routing
from core.cell import with_framework
from core.frameworks import frameworks_help
from core.methods import check_method, methods_help, options_help
from engine.args import StrictParser, check_ascii_text, int_in, positive_float
from engine.benchmark_setup import add_dataset_options
from engine import log as logs


def _model_id(text: str) -> str:
    if not text or any(c.isspace() for c in text):
        raise UsageError(f"a model id must be non-empty without spaces, got {text!r}")
    return check_ascii_text(text, "a model id")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cell", required=True, help="task=...,topology=...[,framework=,communication=,team_size=,model=]"
                   " (topology= may be a registry key, e.g. sequential_crewai or decentralized_r8)")
    p.add_argument("--framework", default=None, help=f"refines --cell: {frameworks_help()} (each an install "
                   "extra; README)")
    p.add_argument("--seed", type=int_in("--seed"), default=0, help="optimizer / evaluation seed: 0, 1 or 2")
    p.add_argument("--task-endpoint", action="append", dest="task_endpoints", metavar="URL",
                   help="OpenAI-compatible base URL (repeatable, round robin; also TASK_ENDPOINTS). "
                        "Omitted: the built-in simulated endpoint")
    p.add_argument("--model-id", type=_model_id, help="model id served by the task endpoint (also MODEL_ID)")
    p.add_argument("--api-key-env", metavar="NAME", default=None,
                   help=f"environment variable holding the task endpoints' API key (default {DEFAULT_API_KEY_ENV}; "
                        "sent as Authorization: Bearer, never written anywhere)")
    p.add_argument("--data-dir", help="local dataset directory (else the dataset's environment variable)")
    p.add_argument("--concurrency", type=int_in("--concurrency", 1), default=64,
                   help="rollouts and requests in flight per endpoint")
    p.add_argument("--request-timeout", type=positive_float("--request-timeout"), default=1200.0,
                   help="read timeout per model call, seconds")
    p.add_argument("--startup-timeout", type=positive_float("--startup-timeout"), default=DEFAULT_STARTUP_TIMEOUT_S,
                   help="deadline of the start-up check (one tiny chat completion per endpoint), seconds")
    p.add_argument("--unsafe-sandbox", action="store_true",
                   help="run model-written code without the jail when none can be built (marks a job non-conformant)")
    p.add_argument("--max-outage", type=positive_float("--max-outage", allow_zero=True), default=900.0,
                   metavar="SECONDS",
                   help="how long the job waits while no task endpoint is healthy before rollouts fail "
                        "(default 900 = 15 min); waits are not rollout attempts and are recorded in the card")
    p.add_argument("--quiet", action="store_true")
    add_dataset_options(p)  # each dataset's own (core/datasets.py): --wiki-dir, --swe-repos, ...


def job_parser() -> StrictParser:
    """The `job` command's parser; its choices and help come from the method, dataset and framework tables."""
    p = StrictParser(prog="python -m engine job", description="Run one mas-promptbench-v1 job.")
    _common(p)
    p.add_argument("--method", required=True, type=check_method, metavar="METHOD",
                   help=f"the optimization method. {methods_help()}")
    p.add_argument("--out", required=True, help="job directory (re-run the same command to resume)")
    p.add_argument("--budget", type=int_in("--budget"), default=None,
                   help=f"usable rollouts, 1..{FULL_BUDGET} (default {FULL_BUDGET} = conformant; with --smoke the "
                        "method's smallest budget for the smoke splits)")
    p.add_argument("--smoke", type=int_in("--smoke", 1), default=None, metavar="N",
                   help="smoke run: every phase on the first N rows of each split (train, validation, test) at a "
                        "small budget, non-conformant (skipped by aggregate unless --include-nonconformant); N "
                        "larger than a split is refused")
    p.add_argument("--reflection-endpoint", help="reflection model base URL (also REFLECTION_MODEL_BASE_URL)")
    p.add_argument("--reflection-model", type=_model_id, help="reflection model id (also REFLECTION_MODEL_ID)")
    p.add_argument("--reflection-api-key-env", metavar="NAME", default=None,
                   help=f"environment variable holding the reflection endpoint's API key (default "
                        f"{DEFAULT_REFLECTION_API_KEY_ENV})")
    p.add_argument("--allow-small-budget", action="store_true",
                   help="proceed with a budget below the method's smallest useful budget")
    p.add_argument("--phase", default="all", choices=["all", "optimize", "validate", "test"],
                   help="run the phases up to this one (validate needs optimization.json, test selection.json)")
    p.add_argument("--allow-any-cell", action="store_true",
                   help="run a cell outside the grid tables (marked non-conformant); refused otherwise")
    p.add_argument("--method-option", action="append", default=[], metavar="NAME=VALUE", type=_method_option,
                   help=f"a method's option, non-conformant unless its default ({options_help()})")
    p.add_argument("--routing", type=check_routing, default=None, metavar="|".join(ROUTINGS),
                   help="which task endpoint serves a request (default cache-aware with more than one endpoint, "
                        "else least-loaded); never changes a result; recorded in the card's pool summary")
    return p


def _method_option(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise UsageError(f"--method-option must be NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def job_main(argv: list[str]) -> int:
    args = job_parser().parse_args(argv)
    args.cell = with_framework(args.cell, args.framework)
    logs.configure(logs.current_format(), quiet=args.quiet)
    from engine.benchmark_setup import dataset_options
    from engine.job.config import build_config
    from engine.job.run_job import run_job, summary_line
    import engine.sim.start  # noqa: F401  (provides the simulated endpoint to a job given no task endpoint)

    cfg = build_config(cell=args.cell, method=args.method, seed=args.seed, out=args.out, budget=args.budget,
                       task_endpoints=args.task_endpoints, model_id=args.model_id, data_dir=args.data_dir,
                       concurrency=args.concurrency, reflection_endpoint=args.reflection_endpoint,
                       reflection_model=args.reflection_model, allow_small_budget=args.allow_small_budget,
                       quiet=args.quiet, request_timeout=args.request_timeout, api_key_env=args.api_key_env,
                       reflection_api_key_env=args.reflection_api_key_env, startup_timeout=args.startup_timeout,
                       unsafe_sandbox=args.unsafe_sandbox, phase=args.phase,
                       allow_any_cell=args.allow_any_cell, dataset_options=dataset_options(args),
                       max_outage=args.max_outage, smoke=args.smoke, method_options=dict(args.method_option))
    with default_routing(args.routing):
        result = anyio.run(run_job, cfg)
    print(json.dumps(summary_line(result, smoke=cfg.smoke), sort_keys=True))
    return 0


def run_main(argv: list[str]) -> int:
    p = StrictParser(prog="python -m engine run", description="Baseline run of one bundle on a split, recorded.")
    _common(p)
    p.add_argument("--split", default="test", choices=["train", "validation", "test"])
    p.add_argument("--only", nargs="+", metavar="ID", help="run only these example IDs (in this order)")
    p.add_argument("--limit", type=int_in("--limit", 1), help="run only the first N IDs of the split")
    p.add_argument("--bundle", help="bundle JSON file (default: the seed bundle of the cell)")
    p.add_argument("--out", required=True, help="predictions JSONL; the store is written beside it")
    args = p.parse_args(argv)
    args.cell = with_framework(args.cell, args.framework)
    logs.configure(logs.current_format(), quiet=args.quiet)
    from engine.cli.baseline import check_run_options, run_baseline

    plan = check_run_options(args)
    summary = anyio.run(run_baseline, args, plan)
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(job_main(sys.argv[1:]))
