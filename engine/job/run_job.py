"""`python -m engine job`: one job, resumable from its store. This module wires it (input checks, endpoints,
lock, store, run node, the optimizer built once) and runs the phases in order: engine.job.phase_optimize,
phase_select and phase_heldout, each returning its typed artifact (core.artifacts)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio

from core.artifacts import JobIdentity, JobResult, Optimization
from core.benchmark import Benchmark
from core.contracts import JOB_CONTRACT_VERSION
from core.errors import UsageError
from core.ledger import BudgetLedger
from core.models import PromptBundle, RolloutRecord
from core.optimizer import Optimizer
from core.protocol import REFLECTION_TIMEOUT_S
from engine.chat.endpoint import EndpointPool
from engine.heap import long_lived_heap_frozen
from engine.job.artifacts import read_artifact
from engine.benchmark_setup import configure_benchmark, tool_environment
from engine.job.config import DEFAULT_REFLECTION_URL, JobConfig
from engine.job.context import JobContext
from engine.job.data import JobData
from engine.job.endpoints import open_reflection_endpoint, open_task_pool, watch_pools
from engine.job.evidence import check_resumed_evidence, reports_of, with_evidence
from engine.job.evaluation import Evaluator, SharedEvaluations
from engine.job.identity import build_identity, check_out_dir, claimed_tables, write_identity
from engine.job.late_clients import LateClient, late_clients
from engine.job.lock import job_lock
from engine.job.optimization import task_model_clients
from engine.job.phase_heldout import held_out_test
from engine.job.phase_optimize import optimize
from engine.job.phase_select import select
from engine.job.phases import PhaseCompleted, check_phase_inputs, phase_summary
from engine.job.recovery import record_failure, recover, say_replays, unfinished
from engine.job.sandbox_gate import gate_sandbox
from engine.job.smoke import announce, progress_prefix, smoke_budget
from engine.log import get_logger
from engine.progress import Progress, ProgressSnapshot
from engine.reflection import ReflectionClient
from engine.runner import Runner
from engine.store import Store
from engine.store.schema import create_store_file
from core.methods import method_options
from optimizers.registry import get_optimizer, smallest_budget, task_model_components, uses_reflection
from topologies.prompts import seed_bundle as load_seed_bundle
from engine.gateway.server import Gateway
from engine.runtimes import build_topology, needs_gateway

log = get_logger("engine.job")

JobOutcome = JobResult | PhaseCompleted  # a full run's result.json; a run stopped after a phase, its summary


@dataclass(frozen=True)
class Prepared:
    """What `prepare` checked and built: everything a job needs before anything is written."""

    bench: Benchmark
    topology: Any
    optimizer: Optimizer  # built once; its model clients are bound when the store is open
    clients: dict[str, LateClient]
    data: JobData
    seed_bundle: PromptBundle
    identity: JobIdentity
    cfg: JobConfig  # the config as run: a smoke run's budget resolved (engine/job/smoke.py)
    least: int  # the method's smallest budget for these splits (protocol 8.9)


def prepare(cfg: JobConfig, bench: Benchmark | None = None) -> Prepared:
    """Everything that can fail on bad input, before anything is written. `bench` overrides the registry
    (tests and embedding applications)."""
    if bench is None:
        from benchmarks.registry import get_benchmark

        bench = get_benchmark(cfg.cell.task)
    bench = configure_benchmark(bench, cfg.dataset_options, cfg.data_dir)
    gate_sandbox(bench, cfg.unsafe_sandbox)  # after configure: SWE runs commands only with checkouts
    # Every request of a job goes through the optimizer bridge: contract version 2 plus the format nudges.
    topology = build_topology(cfg.cell, contract_version=JOB_CONTRACT_VERSION)
    clients = late_clients(cfg.method)
    options, _ = method_options(cfg.method, cfg.method_options)  # non-default ones: non-conformant (identity)
    optimizer = get_optimizer(cfg.method, seed=cfg.seed, **clients, **options)  # type: ignore[arg-type]
    claimed_tables(cfg)  # an off-grid cell is refused before any data is read
    data = JobData(bench, cfg.data_dir, cfg.out, rows_per_split=cfg.smoke)
    data.train()
    data.validation()
    least = smallest_budget(optimizer, len(data.splits.train), len(data.splits.validation))
    cfg = smoke_budget(cfg, least)
    if cfg.budget < least and not cfg.allow_small_budget:
        raise UsageError(f"--budget {cfg.budget} is below {cfg.method}'s smallest useful budget "
                         f"({least}); pass --allow-small-budget to proceed anyway")
    roles = topology.roles(cfg.cell.task, cfg.cell.team_size)
    seed = load_seed_bundle(cfg.cell.topology, cfg.cell.task, roles)
    sizes = {name: len(data.splits.ids(name)) for name in ("train", "validation", "test")}
    identity = build_identity(cfg, seed, data.split_sha256, sizes, scorer_id=bench.scorer_id,
                              tool_environment=tool_environment(bench))
    return Prepared(bench, topology, optimizer, clients, data, seed, identity, cfg, least)


async def run_job(cfg: JobConfig, bench: Benchmark | None = None, *, shared_pool: EndpointPool | None = None,
                  shared_reflection: EndpointPool | None = None,
                  shared_evaluations: SharedEvaluations | None = None,
                  on_progress: Callable[[ProgressSnapshot], None] | None = None) -> JobOutcome:
    """The phases up to `cfg.phase`; returns result.json as core.artifacts.JobResult (or the phase summary after
    an early phase).
    A sweep (engine/sweep) passes its checked endpoint pools (shared by all its jobs: one in-flight limit per
    endpoint; their health probes and wait events belong to the sweep) and its shared-evaluation cache; alone,
    the job opens, checks and watches its own. `on_progress` receives the job's progress snapshots (throttled;
    engine/progress.py): a sweep records them for `sweep status`."""
    ready = prepare(cfg, bench)
    cfg = ready.cfg
    resuming = check_out_dir(cfg.out, ready.identity)
    check_phase_inputs(cfg)
    announce(cfg, ready.least)
    async with AsyncExitStack() as stack:
        if shared_pool is not None:
            pool, reflection = shared_pool, shared_reflection if uses_reflection(cfg.method) else None
        else:
            pool, reflection = await _open_endpoints(stack, cfg)
        cfg.out.mkdir(parents=True, exist_ok=True)
        stack.enter_context(job_lock(cfg.out))
        ready = replace(ready, identity=_identity(cfg, ready.identity, resuming, pool, reflection))
        ready.data.record_splits()
        cell_id = ready.identity.cell_id
        store = await stack.enter_async_context(Store(cfg.out / "card.sqlite", run_id=cell_id))
        if shared_pool is None:
            await watch_pools(stack, store, *([pool] if reflection is None else [pool, reflection]))
        run_node = await _open_run_node(cfg, store, ready.identity)
        gateway = await stack.enter_async_context(Gateway()) if needs_gateway(ready.topology) else None
        ctx = _context(cfg, ready, store, pool, run_node, shared_evaluations, gateway, on_progress)
        if reflection is not None:
            _bind_model_clients(ctx, reflection, pool)
        try:
            with long_lived_heap_frozen():  # setup's heap (data, schemas, modules) out of the collector's passes
                try:
                    result = await run_phases(ctx)
                finally:
                    say_replays(ctx, resuming)
        except BaseException as exc:
            try:  # nodes in flight end cancelled: a failed run leaves none running
                with anyio.fail_after(30, shield=True):
                    await _cancel_interrupted(store, run_node, f"the job failed ({type(exc).__name__}) before this "
                                                               "node finished")
            except TimeoutError:
                log.warning("warning: could not mark the nodes in flight cancelled within 30 s")
            await record_failure(store, run_node, exc)
            raise
        await store.set_node_status(run_node, "completed", actor="engine:job",
                                    reason="job finished" if cfg.phase in ("all", "test") else
                                    f"phase {cfg.phase} finished (later phases not run)")
        await store.mutate("run.status_changed", "run", cell_id, actor="engine:job",
                           new={"status": "completed"}, reason="job finished")
    return result


def _identity(cfg: JobConfig, identity: JobIdentity, resuming: bool, pool: EndpointPool,
              reflection: EndpointPool | None) -> JobIdentity:
    """job.json with what the endpoints reported (engine/job/evidence.py): written on a fresh start (the store
    first, whole: a job.json never names a store that is not there); on resume the recorded one, unless the
    endpoints now contradict its conformance."""
    found = with_evidence(identity, reports_of(pool, reflection), simulated_task=cfg.simulated,
                          simulated_reflection=cfg.simulated and not cfg.reflection_endpoint)
    if not resuming:
        create_store_file(cfg.out / "card.sqlite")
        write_identity(cfg.out, found)
        return found
    recorded = read_artifact(cfg.out / "job.json", JobIdentity).artifact
    check_resumed_evidence(recorded, found)
    return recorded


async def run_phases(ctx: JobContext) -> JobOutcome:
    """The phases up to `cfg.phase`, each returning its typed artifact (and resuming from it when sealed)."""
    optimization = await optimize(ctx)
    if ctx.cfg.phase == "optimize":
        return phase_summary(ctx.identity, "optimize", optimization=optimization.artifact)
    selection = await select(ctx, optimization)
    if ctx.cfg.phase == "validate":
        return phase_summary(ctx.identity, "validate", optimization=optimization.artifact,
                             selection=selection.artifact)
    return await held_out_test(ctx, optimization, selection)


async def _open_endpoints(stack: AsyncExitStack, cfg: JobConfig) -> tuple[EndpointPool, EndpointPool | None]:
    """The task pool, and the reflection endpoint when the method reflects and its optimization is not sealed;
    both checked before anything is written."""
    pool, urls = await open_task_pool(stack, cfg.task_endpoints, task=cfg.cell.task, data_dir=cfg.data_dir,
                                      model_id=cfg.task_model_id, concurrency=cfg.concurrency,
                                      request_timeout=cfg.request_timeout, sim_delay_s=cfg.sim_delay_s,
                                      reflection_model=cfg.reflection_model, api_key_env=cfg.api_key_env,
                                      startup_timeout=cfg.startup_timeout, max_outage=cfg.max_outage)
    if not uses_reflection(cfg.method) or _optimization_completed(cfg.out):
        return pool, None
    # its own endpoint (the simulated one when simulated without one)
    reflection_url = cfg.reflection_endpoint or (urls[0] if cfg.simulated else DEFAULT_REFLECTION_URL)
    reflection = await open_reflection_endpoint(
        stack, reflection_url, model_id=cfg.reflection_model, concurrency=cfg.concurrency,
        read_timeout=REFLECTION_TIMEOUT_S, key_env=cfg.reflection_api_key_env,
        fallback_key_env=cfg.api_key_env if reflection_url in urls else None,
        startup_timeout=cfg.startup_timeout, max_outage=cfg.max_outage)
    return pool, reflection


async def _open_run_node(cfg: JobConfig, store: Store, identity: JobIdentity) -> str:
    """The job's root node: created (with its mpb.job annotation) or, on resume, back to running."""
    run_node = f"run/{identity.cell_id}"
    if await store.add_node(node_id=run_node, parent_id=None, instance_key=identity.cell_id, task_key="job",
                            status="running", worker_key=None, level=0, actor="engine:job"):
        ident = identity.to_json()
        await store.annotate("node", run_node, "mpb.job", {k: ident[k] for k in
                             ("cell", "method", "optimizer_seed", "budget", "protocol_conformant",
                              "nonconformance_reasons", "endpoint_kind", "task_model_id", "endpoint_reports", "smoke")
                              if k in ident}, actor="engine:job")
    else:
        await store.set_node_status(run_node, "running", actor="engine:job",
                                    reason=f"resumed (store generation {store.generation})")
        await _cancel_interrupted(store, run_node)
        await recover(cfg.out, store, identity.cell_id, quiet=cfg.quiet)
    return run_node


def _context(cfg: JobConfig, ready: Prepared, store: Store, pool: EndpointPool, run_node: str,
             shared_evaluations: SharedEvaluations | None = None, gateway: Gateway | None = None,
             on_progress: Callable[[ProgressSnapshot], None] | None = None) -> JobContext:
    ledger = BudgetLedger(cfg.budget)
    # optimize: charged/budget; each evaluation: done/total, rate, ETA; the method's model-call failures
    progress = Progress(ledger, cfg.quiet, clients=ready.clients, prefix=progress_prefix(cfg), report=on_progress)
    runner = Runner(store=store, pool=pool, bench=ready.bench, topology=ready.topology, run_node=run_node,
                    retry=cfg.retry, concurrency=cfg.concurrency, attempt_timeout=cfg.attempt_timeout,
                    on_record=progress, gateway=gateway)
    evaluator = Evaluator(runner=runner, job_dir=cfg.out, condition=ready.identity.condition,
                          evaluation_seed=cfg.seed, shared=shared_evaluations, progress=progress)
    return JobContext(cfg=cfg, identity=ready.identity, bench=ready.bench, topology=ready.topology,
                      optimizer=ready.optimizer, data=ready.data, seed_bundle=ready.seed_bundle, store=store,
                      run_node=run_node, ledger=ledger, runner=runner, evaluator=evaluator, clients=ready.clients,
                      progress=progress)


def _bind_model_clients(ctx: JobContext, reflection_endpoint: EndpointPool, pool: EndpointPool) -> None:
    """The optimizer's reflection client on its endpoint and its judge/probe clients on the task endpoints,
    recorded and replayable (engine.reflection)."""
    cfg = ctx.cfg
    client = ReflectionClient(endpoint=reflection_endpoint, store=ctx.store, run_node=ctx.run_node,
                              cell_id=ctx.cell_id, optimizer_seed=cfg.seed, retry=cfg.retry)
    clients = task_model_clients(task_model_components(cfg.method), pool=pool, store=ctx.store,
                                 run_node=ctx.run_node, cell_id=ctx.cell_id, optimizer_seed=cfg.seed,
                                 retry=cfg.retry)
    for name, target in {"reflection": client, **clients}.items():
        ctx.clients[name].bind(target)


async def _cancel_interrupted(store: Store, run_node: str, why: str | None = None) -> None:
    """Nodes a killed process left `running` (or a failing job had in flight: `why`) become `cancelled` with a
    reason, so the card shows the interruption (on resume their rollouts are replayed or re-run under new
    execution ids)."""
    await store.cancel_running(
        keep=run_node, actor="engine:job",
        reason=why or f"interrupted: the process ended before this node finished; resumed in store generation "
                      f"{store.generation}",
        failure={"kind": "cancelled_by_parent", "message": why or "process interrupted"})


def _optimization_completed(out: Path) -> bool:
    """Optimization is sealed as completed and this run keeps it: its reflection endpoint is no longer needed (nor
    checked). One holding a rollout that failed every attempt is set aside and run again (engine.job.recovery):
    that re-run reflects."""
    path = out / "optimization.json"
    if not path.exists() or read_artifact(path, Optimization).artifact.status != "completed":
        return False
    return str(out / "optimization.json") not in {str(p) for p in unfinished(out)[1]}


def summary_line(result: JobOutcome, smoke: int | None = None) -> dict[str, Any]:
    """The stdout line; a smoke run's says `"smoke": N` (rows per split)."""
    label = {} if smoke is None else {"smoke": smoke}
    if isinstance(result, PhaseCompleted):
        return {**result.to_json(), **label}
    test, budget = result.test, result.optimization.budget
    return {**label, "status": result.status, "cell_id": result.cell_id, "baseline_mean": test.baseline_mean,
            "deployed_mean": test.deployed_mean, "delta_pp": test.delta_pp,
            "valid_for_aggregation": test.valid_for_aggregation, "fallback_reason": result.selection.fallback_reason,
            "charged": None if budget is None else budget.charged,
            "failure_counts": None if test.failure_counts is None else test.failure_counts.to_json(),
            "protocol_conformant": result.protocol_conformant, "endpoint_kind": result.endpoint_kind}
