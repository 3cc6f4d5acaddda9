"""`python -m engine run`: one bundle on one split (baseline sweeps), with the same records a job writes.

The store and the content-addressed evaluation go to `<out stem>.run/` beside the predictions file.
"""

from __future__ import annotations

import argparse
import math
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from core.canonical import content_hash
from core.cell import parse_cell
from core.errors import DataError, UsageError
from core.models import PromptBundle
from core.protocol import condition, split_hash
from engine.job.artifacts import read_json, write_jsonl_atomic
from engine.job.config import SIMULATED_MODEL_ID, endpoints_from
from engine.job.endpoints import open_task_pool, watch_pools
from engine.job.evaluation import Evaluator, failure_counts
from engine.runner import RetryPolicy, Runner
from engine.store import Store
from topologies.prompts import seed_bundle
from topologies.registry import get_topology


async def run_baseline(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.registry import get_benchmark

    cell = parse_cell(args.cell)
    if args.seed not in (0, 1, 2):
        raise UsageError(f"--seed must be 0, 1 or 2, got {args.seed}")
    bench = get_benchmark(cell.task)
    topology = get_topology(cell.topology, cell.team_size, cell.communication)
    splits = bench.splits()
    ids = list(splits.ids(args.split))
    if args.only:
        unknown = [i for i in args.only if i not in ids]
        if unknown:
            raise DataError(f"--only IDs not in the {args.split} split: {', '.join(unknown[:5])}")
        ids = list(args.only)
    if args.limit is not None:
        ids = ids[: args.limit]
    rows = bench.load_rows(ids, args.data_dir)
    seed = seed_bundle(cell.topology, cell.task, topology.roles(cell.task, cell.team_size))
    bundle = PromptBundle.from_json(read_json(Path(args.bundle))) if args.bundle else seed
    cond = condition(task=cell.task, topology=cell.topology, framework=cell.framework,
                     communication=cell.communication, team_size=cell.team_size, task_model=cell.task_model,
                     initial_bundle_sha256=seed.digest, scorer_id=f"{bench.name}:protocol:v1",
                     split_sha256=split_hash(splits.as_hash_payload()))
    out = Path(args.out)
    work = out.parent / f"{out.stem}.run"
    if not (math.isfinite(args.max_outage) and args.max_outage >= 0):
        raise UsageError(f"--max-outage must be a finite number of seconds >= 0, got {args.max_outage}")
    endpoints = endpoints_from(args.task_endpoints)
    if endpoints and not args.model_id:
        raise UsageError("--model-id is required with a real --task-endpoint")
    async with AsyncExitStack() as stack:
        pool, _ = await open_task_pool(stack, endpoints, task=cell.task, data_dir=args.data_dir,
                                       model_id=args.model_id or SIMULATED_MODEL_ID, concurrency=args.concurrency,
                                       request_timeout=args.request_timeout, max_outage=args.max_outage)
        store = await stack.enter_async_context(Store(work / "card.sqlite", run_id=content_hash(cond)[:24]))
        await watch_pools(stack, store, pool)
        run_node = f"run/baseline/{content_hash(cond)[:24]}"
        await store.add_node(node_id=run_node, parent_id=None, instance_key="baseline", task_key="baseline",
                             status="running", worker_key=None, level=0, actor="engine:run")
        runner = Runner(store=store, pool=pool, bench=bench, topology=topology, run_node=run_node,
                        retry=RetryPolicy(), concurrency=args.concurrency)
        evaluation = await Evaluator(runner=runner, job_dir=work, condition=cond,
                                     evaluation_seed=args.seed).evaluate(bundle, args.split, rows,
                                                                          keep_outputs=True)
        await store.set_node_status(run_node, "completed", actor="engine:run")
    write_jsonl_atomic(out, [r.model_copy(update={"replayed": False}).model_dump(mode="json")
                             for r in evaluation.records])
    return {"evaluation_id": evaluation.evaluation_id, "split": args.split, "n": len(evaluation.records),
            "mean": evaluation.mean, "failure_counts": failure_counts(evaluation.records),
            "simulated": not endpoints, "predictions": str(out)}
