"""`python -m engine run`: one bundle on one split (baseline sweeps), with the same records a job writes.

The store and the content-addressed evaluation go to `<out stem>.run/` beside the predictions file. Every option
(cell, ids, bundle shape, output paths, endpoints, keys) is checked by `check_run_options` before anything is
written or any endpoint is contacted.
"""

from __future__ import annotations

import argparse
import os
import math
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic

from core.benchmark import Benchmark
from core.canonical import content_hash
from core.cell import parse_cell
from core.errors import DataError, UsageError
from core.contracts import RUN_CONTRACT_VERSION
from core.models import PromptBundle, Row
from core.protocol import condition, split_hash
from core.vocabulary import SIMULATED_TASK_MODEL_ID, Actor, NodeStatus
from engine.chat.auth import DEFAULT_API_KEY_ENV
from engine.args import check_out_directory, check_out_file
from engine.job.artifacts import read_json, write_jsonl_atomic
from engine.benchmark_setup import configure_benchmark, dataset_options, tool_environment
from engine.job.config import (
    check_cell_text,
    check_endpoints_option,
    check_key_options,
    check_timeout,
    endpoints_from,
)
from engine.job.endpoints import open_task_pool, watch_pools
import engine.sim.start  # noqa: F401  (provides the simulated endpoint to a run given no task endpoint)
from engine.progress import Progress
from engine.job.evaluation import Evaluator, failure_counts
from engine.job.sandbox_gate import gate_sandbox
from engine.retry import RetryPolicy
from engine.runner import Runner
from engine.store import Store
from engine.store.check import check_store_file
from topologies.prompts import seed_bundle
from engine.gateway.server import Gateway
from engine.runtimes import build_topology, needs_gateway


@dataclass(frozen=True)
class RunPlan:
    task: str
    bench: Benchmark
    topology: Any
    rows: list[Row]
    bundle: PromptBundle
    condition: dict[str, Any]
    out: Path
    work: Path
    endpoints: tuple[str, ...]
    model_id: str


def load_bundle(path: Path, roles: list[str]) -> PromptBundle:
    """A bundle file of the right shape for this cell's roles, else a one-line UsageError."""
    data = read_json(path)
    try:
        if not isinstance(data, dict) or not isinstance(data.get("roles"), dict):
            raise ValueError("expected a JSON object with a 'roles' object")
        bundle = PromptBundle.from_json(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        detail = f"{'.'.join(map(str, first['loc'])) or 'bundle'}: {first['msg']}"[:200]
        raise UsageError(f"--bundle {path} is not a prompt bundle: {detail}") from None
    except (ValueError, TypeError, KeyError) as exc:
        detail = " ".join(str(exc).split())[:200]
        raise UsageError(f"--bundle {path} is not a prompt bundle: {detail}") from None
    if set(bundle.roles) != set(roles):
        raise UsageError(f"--bundle {path} has roles {sorted(bundle.roles)}; this cell needs {sorted(roles)}")
    return bundle


def check_run_options(args: argparse.Namespace) -> RunPlan:
    from benchmarks.registry import get_benchmark

    cell = parse_cell(check_cell_text(args.cell))
    if args.seed not in (0, 1, 2):
        raise UsageError(f"--seed must be 0, 1 or 2, got {args.seed}")
    check_timeout(args.request_timeout, "--request-timeout")
    check_timeout(args.startup_timeout, "--startup-timeout")
    if not (math.isfinite(args.max_outage) and args.max_outage >= 0):
        raise UsageError(f"--max-outage must be a finite number of seconds >= 0, got {args.max_outage}")
    endpoints = check_endpoints_option(endpoints_from(args.task_endpoints))
    model_id = args.model_id or (os.environ.get("MODEL_ID") if endpoints else None)
    if endpoints and not model_id:
        raise UsageError("--model-id (or MODEL_ID) is required with a real --task-endpoint")
    check_key_options(args.api_key_env or DEFAULT_API_KEY_ENV, "REFLECTION_API_KEY",
                      explicit=args.api_key_env is not None, explicit_reflection=False)
    out = Path(args.out)
    check_out_file(out)
    work = out.parent / f"{out.stem}.run"
    check_out_directory(work, f"--out {out}: its store directory")
    store = work / "card.sqlite"
    if store.is_file() and store.stat().st_size > 0:  # re-run: the existing store must be intact and writable
        check_store_file(store, writable=True)
    bench = get_benchmark(cell.task)
    bench = configure_benchmark(bench, dataset_options(args), args.data_dir)
    gate_sandbox(bench, args.unsafe_sandbox)  # after configure: SWE runs commands only with checkouts
    # Baseline runs are the protocol's runners: output contract version 1, no format nudges (section 9).
    topology = build_topology(cell, contract_version=RUN_CONTRACT_VERSION)
    splits = bench.splits()
    ids = list(splits.ids(args.split))
    if args.only:
        unknown = [i for i in args.only if i not in ids]
        if unknown:
            raise DataError(f"--only IDs not in the {args.split} split: {', '.join(unknown[:5])}")
        ids = list(args.only)
    if args.limit is not None:
        ids = ids[: args.limit]
    roles = topology.roles(cell.task, cell.team_size)
    seed = seed_bundle(cell.topology, cell.task, roles)
    bundle = load_bundle(Path(args.bundle), roles) if args.bundle else seed
    rows = bench.load_rows(ids, args.data_dir)
    cond = condition(task=cell.task, topology=cell.topology, framework=cell.framework,
                     communication=cell.communication, team_size=cell.team_size, task_model=cell.task_model,
                     initial_bundle_sha256=seed.digest, scorer_id=bench.scorer_id,
                     split_sha256=split_hash(splits.as_hash_payload()), contract_version=RUN_CONTRACT_VERSION,
                     tool_environment=tool_environment(bench))
    return RunPlan(task=cell.task, bench=bench, topology=topology, rows=rows, bundle=bundle, condition=cond, out=out,
                   work=work, endpoints=endpoints, model_id=model_id or SIMULATED_TASK_MODEL_ID)


async def run_baseline(args: argparse.Namespace, plan: RunPlan) -> dict[str, Any]:
    run_id = content_hash(plan.condition)[:24]
    async with AsyncExitStack() as stack:
        pool, _ = await open_task_pool(stack, plan.endpoints, task=plan.task, data_dir=args.data_dir,
                                       model_id=plan.model_id, concurrency=args.concurrency,
                                       request_timeout=args.request_timeout,
                                       api_key_env=args.api_key_env or DEFAULT_API_KEY_ENV,
                                       startup_timeout=args.startup_timeout, max_outage=args.max_outage)
        store = await stack.enter_async_context(Store(plan.work / "card.sqlite", run_id=run_id))
        await watch_pools(stack, store, pool)
        run_node = f"run/baseline/{run_id}"
        await store.add_node(node_id=run_node, parent_id=None, instance_key="baseline", task_key="baseline",
                             status=NodeStatus.RUNNING, worker_key=None, level=0, actor=Actor.RUN)
        progress = Progress(None, quiet=False)  # done/total, failures, rate and ETA on stderr
        gateway = await stack.enter_async_context(Gateway()) if needs_gateway(plan.topology) else None
        runner = Runner(store=store, pool=pool, bench=plan.bench, topology=plan.topology, run_node=run_node,
                        retry=RetryPolicy(), concurrency=args.concurrency, on_record=progress, gateway=gateway)
        evaluation = await Evaluator(runner=runner, job_dir=plan.work, condition=plan.condition,
                                     evaluation_seed=args.seed, progress=progress).evaluate(
                                         plan.bundle, args.split, plan.rows, keep_outputs=True)
        await store.set_node_status(run_node, NodeStatus.COMPLETED, actor=Actor.RUN)
    write_jsonl_atomic(plan.out, [r.model_copy(update={"replayed": False}).model_dump(mode="json")
                                  for r in evaluation.records])
    return {"evaluation_id": evaluation.evaluation_id, "split": args.split, "n": len(evaluation.records),
            "mean": evaluation.mean, "failure_counts": failure_counts(evaluation.records),
            "simulated": not plan.endpoints, "predictions": str(plan.out)}
