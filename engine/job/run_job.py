"""`python -m engine job`: the three protocol phases of one job, resumable from its store."""

from __future__ import annotations

import fcntl
import sys
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import structlog

from core.benchmark import Benchmark
from core.canonical import content_hash
from core.contracts import JOB_CONTRACT_VERSION
from core.errors import ArtifactError, InfrastructureError, InfrastructureInvalidError, UsageError
from core.ledger import BudgetLedger
from core.models import PromptBundle, RolloutRecord
from core.optimizer import CurvePoint, Optimizer, OptimizerResult
from core.protocol import PROTOCOL_ID, REFLECTION_TIMEOUT_S
from core.selection import decide, forbidden_metadata
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts
from engine.job.benchmark_setup import configure_benchmark, tool_environment
from engine.job.artifacts import read_json, read_sealed, write_json_atomic, write_jsonl_atomic, write_sealed
from engine.job.config import DEFAULT_REFLECTION_URL, JobConfig
from engine.job.data import JobData
from engine.job.evaluation import Evaluation, Evaluator, SharedEvaluations, failure_counts
from engine.job.identity import build_identity, check_out_dir, claimed_tables, write_identity
from engine.job.optimization import LedgerRunner, component_usage, learning_curve, task_model_clients
from engine.job.phases import check_phase_inputs, phase_summary
from engine.job.recovery import record_failure, recover
from engine.job.sandbox_gate import gate_sandbox
from engine.job.endpoints import open_reflection_endpoint, open_task_pool, watch_pools
from engine.reflection import ReflectionClient
from engine.runner import Runner
from engine.store import Store
from optimizers.registry import get_optimizer, smallest_budget, task_model_components, uses_reflection
from topologies.prompts import seed_bundle as load_seed_bundle
from topologies.registry import get_topology

log = structlog.get_logger("engine.job")


@contextmanager
def job_lock(out: Path) -> Iterator[None]:
    """One process per job directory: a second `job` on the same --out is refused while the first runs."""
    fh = open(out / ".job.lock", "a+")
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"another process is running the job in {out}; wait for it or use another --out")
        yield
    finally:
        fh.close()


class Progress:
    """A progress line on stderr every 10 charged rollouts."""

    def __init__(self, ledger: BudgetLedger | None, quiet: bool):
        self.ledger, self.quiet, self._last = ledger, quiet, 0

    def __call__(self, record: RolloutRecord) -> None:
        if self.quiet or self.ledger is None:
            return
        snap = self.ledger.snapshot()
        if snap.charged // 10 > self._last // 10:  # crossed a multiple of 10 (commits interleave)
            self._last = snap.charged
            print(f"progress: charged={snap.charged}/{snap.maximum} attempted={snap.attempted} "
                  f"infra={snap.infrastructure_failures} last={record.status.value}", file=sys.stderr, flush=True)


def prepare(cfg: JobConfig, bench: Benchmark | None = None
            ) -> tuple[Benchmark, Any, Optimizer, JobData, PromptBundle, dict[str, Any]]:
    """Everything that can fail on bad input, before anything is written. `bench` overrides the registry
    (tests and embedding applications)."""
    if bench is None:
        from benchmarks.registry import get_benchmark

        bench = get_benchmark(cfg.cell.task)
    gate_sandbox(bench, cfg.unsafe_sandbox)
    bench = configure_benchmark(bench, cfg.dataset_options, cfg.data_dir)
    # Every request of a job goes through the optimizer bridge: contract version 2 plus the format nudges.
    topology = get_topology(cfg.cell.topology, cfg.cell.team_size, cfg.cell.communication,
                            contract_version=JOB_CONTRACT_VERSION)
    optimizer = get_optimizer(cfg.method, seed=cfg.seed)
    claimed_tables(cfg)  # an off-grid cell is refused before any data is read
    data = JobData(bench, cfg.data_dir, cfg.out)
    data.train()
    data.validation()
    least = smallest_budget(optimizer, len(data.splits.train), len(data.splits.validation))
    if cfg.budget < least and not cfg.allow_small_budget:
        raise UsageError(f"--budget {cfg.budget} is below {cfg.method}'s smallest useful budget "
                         f"({least}); pass --allow-small-budget to proceed anyway")
    roles = topology.roles(cfg.cell.task, cfg.cell.team_size)
    seed = load_seed_bundle(cfg.cell.topology, cfg.cell.task, roles)
    sizes = {"train": len(data.splits.train), "validation": len(data.splits.validation),
             "test": len(data.splits.test)}
    identity = build_identity(cfg, seed, data.split_sha256, sizes, scorer_id=f"{bench.name}:protocol:v1",
                              tool_environment=tool_environment(bench))
    return bench, topology, optimizer, data, seed, identity


async def run_job(cfg: JobConfig, bench: Benchmark | None = None, *, shared_pool: EndpointPool | None = None,
                  shared_reflection: EndpointPool | None = None,
                  shared_evaluations: SharedEvaluations | None = None) -> dict[str, Any]:
    """One job. A sweep (engine/sweep) passes its checked endpoint pools (shared by all its jobs: one in-flight
    limit per endpoint; their health probes and wait events belong to the sweep) and its shared-evaluation cache;
    alone, the job opens, checks and watches its own."""
    bench, topology, optimizer, data, seed_bundle, identity = prepare(cfg, bench)
    resuming = check_out_dir(cfg.out, identity)
    check_phase_inputs(cfg)
    async with AsyncExitStack() as stack:
        if shared_pool is not None:
            pool, urls = shared_pool, [e.base_url for e in shared_pool.endpoints]
        else:
            pool, urls = await open_task_pool(stack, cfg.task_endpoints, task=cfg.cell.task, data_dir=cfg.data_dir,
                                              model_id=cfg.task_model_id, concurrency=cfg.concurrency,
                                              request_timeout=cfg.request_timeout, sim_delay_s=cfg.sim_delay_s,
                                              reflection_model=cfg.reflection_model, api_key_env=cfg.api_key_env,
                                              startup_timeout=cfg.startup_timeout, max_outage=cfg.max_outage)
        reflection: EndpointPool | None = None
        if uses_reflection(cfg.method) and shared_pool is not None:
            reflection = shared_reflection
        elif uses_reflection(cfg.method) and not _optimization_completed(cfg.out):
            # its own endpoint (the simulated one when simulated without one), checked before anything is written
            reflection_url = cfg.reflection_endpoint or (urls[0] if cfg.simulated else DEFAULT_REFLECTION_URL)
            reflection = await open_reflection_endpoint(
                stack, reflection_url, model_id=cfg.reflection_model, concurrency=cfg.concurrency,
                read_timeout=REFLECTION_TIMEOUT_S, key_env=cfg.reflection_api_key_env,
                fallback_key_env=cfg.api_key_env if reflection_url in urls else None,
                startup_timeout=cfg.startup_timeout, max_outage=cfg.max_outage)
        cfg.out.mkdir(parents=True, exist_ok=True)
        stack.enter_context(job_lock(cfg.out))
        if not resuming:
            write_identity(cfg.out, identity)
        else:
            read_sealed(cfg.out / "job.json")
        store = await stack.enter_async_context(Store(cfg.out / "card.sqlite", run_id=identity["cell_id"]))
        if shared_pool is None:
            await watch_pools(stack, store, *([pool] if reflection is None else [pool, reflection]))
        run_node = f"run/{identity['cell_id']}"
        if await store.add_node(node_id=run_node, parent_id=None, instance_key=identity["cell_id"], task_key="job",
                                status="running", worker_key=None, level=0, actor="engine:job"):
            await store.annotate("node", run_node, "mpb.job", {k: identity[k] for k in
                                 ("cell", "method", "optimizer_seed", "budget", "protocol_conformant",
                                  "nonconformance_reasons", "endpoint_kind", "task_model_id")}, actor="engine:job")
        else:
            await store.set_node_status(run_node, "running", actor="engine:job",
                                        reason=f"resumed (store generation {store.generation})")
            await _cancel_interrupted(store, run_node)
            await recover(cfg.out, store, identity["cell_id"], quiet=cfg.quiet)
        job = _Job(cfg, identity, bench, topology, optimizer, data, seed_bundle, store, pool, run_node, reflection,
                   shared_evaluations)
        try:
            result = await job.run()
        except BaseException as exc:
            try:  # nodes in flight end cancelled: a failed run leaves none running
                with anyio.fail_after(30, shield=True):
                    await _cancel_interrupted(store, run_node, f"the job failed ({type(exc).__name__}) before this "
                                                               "node finished")
            except TimeoutError:
                print("warning: could not mark the nodes in flight cancelled within 30 s", file=sys.stderr)
            await record_failure(store, run_node, exc)
            raise
        await store.set_node_status(run_node, "completed", actor="engine:job",
                                    reason="job finished" if cfg.phase in ("all", "test") else
                                    f"phase {cfg.phase} finished (later phases not run)")
        await store.mutate("run.status_changed", "run", identity["cell_id"], actor="engine:job",
                           new={"status": "completed"}, reason="job finished")
    return result


class _Job:
    def __init__(self, cfg: JobConfig, identity: dict[str, Any], bench: Benchmark, topology: Any,
                 optimizer: Optimizer, data: JobData, seed_bundle: PromptBundle, store: Store, pool: EndpointPool,
                 run_node: str, reflection: EndpointPool | None = None,
                 shared_evaluations: SharedEvaluations | None = None):
        self.cfg, self.identity, self.bench, self.topology = cfg, identity, bench, topology
        self.run_node, self.reflection_endpoint = run_node, reflection
        self.optimizer, self.data, self.seed_bundle, self.store = optimizer, data, seed_bundle, store
        self.out = cfg.out
        self.ledger = BudgetLedger(cfg.budget)
        self.runner = Runner(store=store, pool=pool, bench=bench, topology=topology, run_node=run_node,
                             retry=cfg.retry, concurrency=cfg.concurrency, attempt_timeout=cfg.attempt_timeout,
                             on_record=Progress(self.ledger, cfg.quiet))
        self.evaluator = Evaluator(runner=self.runner, job_dir=self.out, condition=identity["condition"],
                                   evaluation_seed=cfg.seed, shared=shared_evaluations)

    async def run(self) -> dict[str, Any]:
        """The phases up to `cfg.phase` (each resumes from its sealed artifact when it exists)."""
        optimization = await self.optimize()
        if self.cfg.phase == "optimize":
            return phase_summary(self.identity, "optimize", optimization=optimization)
        selection = await self.select(optimization)
        if self.cfg.phase == "validate":
            return phase_summary(self.identity, "validate", optimization=optimization, selection=selection)
        return await self.test(optimization, selection)

    # ------------------------------------------------------------------ phase 1
    async def optimize(self) -> dict[str, Any]:
        path = self.out / "optimization.json"
        if path.exists():
            envelope = read_sealed(path)
            if envelope["cell_id"] != self.identity["cell_id"]:
                raise ArtifactError("optimization.json belongs to another job")
            return envelope
        train, validation = self.data.train(), self.data.validation()
        roles = self.topology.roles(self.cfg.cell.task, self.cfg.cell.team_size)
        facade = LedgerRunner(runner=self.runner, ledger=self.ledger, cell_id=self.identity["cell_id"],
                              optimizer_seed=self.cfg.seed, roles=roles,
                              allowed_ids={r.id for r in train} | {r.id for r in validation})
        if not self.cfg.quiet:
            print(f"plan: {self.optimizer.plan(self.cfg.budget, len(train), len(validation))}", file=sys.stderr)
        clients: dict[str, Any] = {}
        if self.reflection_endpoint is not None:
            client = ReflectionClient(endpoint=self.reflection_endpoint, store=self.store, run_node=self.run_node,
                                      cell_id=self.identity["cell_id"], optimizer_seed=self.cfg.seed,
                                      retry=self.cfg.retry)
            clients = task_model_clients(task_model_components(self.cfg.method), pool=self.runner.pool,
                                         store=self.store, run_node=self.run_node, cell_id=self.identity["cell_id"],
                                         optimizer_seed=self.cfg.seed, retry=self.cfg.retry)
            self.optimizer = get_optimizer(self.cfg.method, seed=self.cfg.seed, reflection=client, **clients)
        started = time.monotonic()
        failure: dict[str, Any] = {"status": "completed", "failure_kind": None}
        try:
            result = await self.optimizer.optimize(facade, train, validation, self.seed_bundle, self.cfg.budget)
        except (InfrastructureInvalidError, InfrastructureError) as exc:
            # Reportable failure: the endpoints (task or reflection) kept failing. The seed bundle is kept and the
            # selection records infrastructure_invalid_optimization; the ledger must still be closed.
            failure = {"status": "failed", "failure_kind": "infrastructure_invalid",
                       "error_type": type(exc).__name__, "error": str(exc)[:2000]}
            charged = self.ledger.snapshot().charged
            result = OptimizerResult(incumbent=self.seed_bundle, stop_reason="infrastructure_invalid",
                                     curve=(CurvePoint(charged, 0, None, self.seed_bundle.digest,
                                                       "infrastructure_invalid"),))
            print(f"warning: optimization stopped, infrastructure invalid: {failure['error']}", file=sys.stderr)
        snap = self.ledger.snapshot()
        if snap.violations():
            raise ArtifactError(f"ledger not closed after optimization: {'; '.join(snap.violations())}")
        opt_dir = self.out / "optimization"
        write_jsonl_atomic(opt_dir / "records.jsonl", facade.charged_artifacts)
        write_jsonl_atomic(opt_dir / "attempts.jsonl", [
            {"example_id": rec.example_id, "status": rec.status.value, "attempts": rec.attempts,
             "charged": rec.charged, "budget_exhausted": rec.budget_exhausted, "rollout_id": rec.rollout_id}
            for rec, _ in facade.records])
        write_jsonl_atomic(opt_dir / "learning_curve.jsonl", learning_curve(result.curve, self.cfg.budget,
                                                                            snap.charged))
        for bundle in {result.incumbent.digest: result.incumbent, self.seed_bundle.digest: self.seed_bundle}.values():
            write_json_atomic(opt_dir / f"bundle-{bundle.digest}.json", bundle.to_json())
        write_sealed(opt_dir / "optimizer_result.json", {
            "method": self.cfg.method, "stop_reason": result.stop_reason,
            "incumbent_bundle": result.incumbent.to_json(), "budget_snapshot": snap.as_dict(),
            "artifacts": result.artifacts})
        records = [rec for rec, _ in facade.records]
        usage_task = _usage_totals(records)
        envelope = {
            "schema": "mas-promptbench-optimization/v1", "protocol_id": PROTOCOL_ID, "method": self.cfg.method,
            "cell": self.identity["cell"], "cell_id": self.identity["cell_id"], **failure,
            "seed_bundle": self.seed_bundle.to_json(),
            "training_ids": [r.id for r in train], "validation_ids": [r.id for r in validation],
            "incumbent_bundle": result.incumbent.to_json(), "stop_reason": result.stop_reason,
            "budget": snap.as_dict(),
            "usage": {"task": usage_task, **component_usage(result.reflection_usage, clients)},
            "failure_counts": failure_counts(records),
            "optimizer_artifact": "optimization/optimizer_result.json",
        }
        # Wall-clock time stays out of the sealed envelope so that a resumed job seals byte-identical artifacts.
        write_json_atomic(opt_dir / "timing.json", {"elapsed_seconds": round(time.monotonic() - started, 3)})
        sealed = write_sealed(path, envelope)
        await self.store.mutate("phase.completed", "run", self.identity["cell_id"], actor="engine:job",
                                new={"phase": "optimize", "stop_reason": result.stop_reason,
                                     "budget": snap.as_dict(), "envelope_sha256": sealed["sha256"]})
        return sealed

    # ------------------------------------------------------------------ phase 2
    async def select(self, optimization: dict[str, Any]) -> dict[str, Any]:
        path = self.out / "selection.json"
        if path.exists():
            selection = read_sealed(path)
            if selection["optimization_envelope_sha256"] != optimization["sha256"]:
                raise ArtifactError("selection.json does not match optimization.json")
            return selection
        validation = self.data.validation()
        incumbent = PromptBundle.from_json(optimization["incumbent_bundle"])
        incumbent_valid = set(incumbent.roles) == set(self.seed_bundle.roles) and not forbidden_metadata(
            incumbent.metadata)
        reportable = optimization["status"] == "completed" and optimization["budget"]["reserved"] == 0
        base_eval = await self.evaluator.evaluate(self.seed_bundle, "validation", validation)
        inc_eval: Evaluation | None = None
        if incumbent_valid and reportable:
            inc_eval = await self.evaluator.evaluate(incumbent, "validation", validation)
        decision = decide(ordered_ids=[r.id for r in validation], seed_records=base_eval.records,
                          incumbent_records=inc_eval.records if inc_eval else None,
                          optimization_reportable=reportable,
                          optimization_infra_invalid=optimization.get("failure_kind") == "infrastructure_invalid",
                          incumbent_valid=incumbent_valid)
        deployed = incumbent if decision.selected_candidate == "incumbent" else self.seed_bundle
        body = {
            "schema": "mas-promptbench-locked-selection/v1", "protocol_id": PROTOCOL_ID,
            "cell": self.identity["cell"], "condition_id": self.identity["condition_id"],
            "optimization_envelope_sha256": optimization["sha256"],
            "seed_bundle": self.seed_bundle.to_json(), "incumbent_bundle": incumbent.to_json(),
            "deployed_bundle": deployed.to_json(), "selected_candidate": decision.selected_candidate,
            "fallback_reason": decision.fallback_reason,
            "baseline_validation_score": decision.baseline_score,
            "incumbent_validation_score": decision.incumbent_score,
            "validation_delta": decision.validation_delta,
            "baseline_validation_id": base_eval.evaluation_id,
            "candidate_validation_id": inc_eval.evaluation_id if inc_eval else None,
            "ordered_validation_ids": [r.id for r in validation],
            "validation_failure_counts": {"baseline": failure_counts(base_eval.records),
                                          "incumbent": failure_counts(inc_eval.records) if inc_eval else None},
            "test_exposed": False,
        }
        body["selection_id"] = content_hash(body)[:32]
        sealed = write_sealed(path, body)
        await self.store.mutate("phase.completed", "run", self.identity["cell_id"], actor="engine:job",
                                new={"phase": "validation", "baseline_evaluation_id": base_eval.evaluation_id,
                                     "candidate_evaluation_id": inc_eval.evaluation_id if inc_eval else None,
                                     "baseline_mean": base_eval.mean,
                                     "incumbent_mean": inc_eval.mean if inc_eval else None})
        await self.store.mutate("selection.sealed", "run", self.identity["cell_id"], actor="engine:selection",
                                new={"selection_id": body["selection_id"],
                                     "selected_candidate": decision.selected_candidate,
                                     "fallback_reason": decision.fallback_reason, "sha256": sealed["sha256"]},
                                reason=decision.fallback_reason or "incumbent strictly better on validation")
        return sealed

    # ------------------------------------------------------------------ phase 3
    async def test(self, optimization: dict[str, Any], selection: dict[str, Any]) -> dict[str, Any]:
        rows = self.data.test()  # raises unless selection.json is sealed and verifies
        deployed = PromptBundle.from_json(selection["deployed_bundle"])
        base = await self.evaluator.evaluate(self.seed_bundle, "test", rows)
        dep = await self.evaluator.evaluate(deployed, "test", rows)
        valid = (all(r.usable for r in base.records) and all(r.usable for r in dep.records)
                 and base.example_ids == dep.example_ids == [r.id for r in rows] and bool(rows))
        base_mean, dep_mean = base.mean, dep.mean
        delta = round(100.0 * (dep_mean - base_mean), 10) if valid and base_mean is not None and dep_mean is not None \
            else None
        counts = {"baseline": failure_counts(base.records), "deployed": failure_counts(dep.records)}
        test_body = {
            "schema": "mas-promptbench-test/v1", "selection_id": selection["selection_id"],
            "condition_id": self.identity["condition_id"], "evaluation_seed": self.cfg.seed,
            "baseline_evaluation_id": base.evaluation_id, "deployed_evaluation_id": dep.evaluation_id,
            "example_ids": base.example_ids, "baseline_scores": base.scores, "deployed_scores": dep.scores,
            "baseline_status": [r.status.value for r in base.records],
            "deployed_status": [r.status.value for r in dep.records],
            "valid_for_aggregation": valid, "baseline_mean": base_mean, "deployed_mean": dep_mean,
            "delta_pp": delta, "fallback_reason": selection["fallback_reason"],
            "selected_candidate": selection["selected_candidate"],
            "usage": {"baseline": _usage_totals(list(base.records)), "deployed": _usage_totals(list(dep.records))},
            "failure_counts": counts, "search_budget_charged": 0,
        }
        write_sealed(self.out / "test.json", test_body)
        await self.store.mutate("phase.completed", "run", self.identity["cell_id"], actor="engine:job",
                                new={"phase": "test", "baseline_evaluation_id": base.evaluation_id,
                                     "deployed_evaluation_id": dep.evaluation_id, "baseline_mean": base_mean,
                                     "deployed_mean": dep_mean, "delta_pp": delta, "valid_for_aggregation": valid,
                                     "failure_counts": counts, "example_ids": base.example_ids})
        ident = self.identity
        result = {
            "schema": "mas-promptbench-job-result/v1", "status": "completed", "protocol_id": PROTOCOL_ID,
            "protocol_conformant": ident["protocol_conformant"],
            "nonconformance_reasons": ident["nonconformance_reasons"], "cell": ident["cell"],
            "cell_id": ident["cell_id"], "method": self.cfg.method, "optimizer_seed": self.cfg.seed,
            "grid_cell": {"method": self.cfg.method, **{k: ident["cell"][k] for k in (
                "task", "topology", "framework", "communication", "team_size", "task_model")}},
            "registry_key": ident["registry_key"], "source_tables": ident["source_tables"],
            "condition_id": ident["condition_id"], "endpoint_kind": ident["endpoint_kind"],
            "optimization": {**{k: optimization.get(k) for k in ("status", "failure_kind", "stop_reason", "budget",
                                                                  "usage", "failure_counts")},
                             "elapsed_seconds": _elapsed(self.out)},
            "selection": {k: selection[k] for k in ("selection_id", "selected_candidate", "fallback_reason",
                                                     "baseline_validation_score", "incumbent_validation_score",
                                                     "validation_delta", "validation_failure_counts")},
            "test": {"example_ids": base.example_ids, "baseline_scores": base.scores, "deployed_scores": dep.scores,
                     "valid_for_aggregation": valid, "baseline_mean": base_mean, "deployed_mean": dep_mean,
                     "delta_pp": delta, "failure_counts": counts},
        }
        write_json_atomic(self.out / "result.json", result)
        return result


async def _cancel_interrupted(store: Store, run_node: str, why: str | None = None) -> None:
    """Nodes a killed process left `running` (or a failing job had in flight: `why`) become `cancelled` with a
    reason, so the card shows the interruption (on resume their rollouts are replayed or re-run under new
    execution ids)."""
    def op(conn: Any) -> None:
        # read in the writer, after every write queued before this one (a cancelled task's op still lands)
        stale = [r[0] for r in conn.execute("SELECT node_id FROM nodes WHERE status='running' AND node_id != ?",
                                            (run_node,))]
        for node_id in stale:
            store.op_status(conn, node_id, "cancelled", actor="engine:job",
                            reason=why or f"interrupted: the process ended before this node finished; resumed in "
                                          f"store generation {store.generation}",
                            extra={"failure": {"kind": "cancelled_by_parent", "message": why or "process interrupted"}})

    await store.write(op)


def _optimization_completed(out: Path) -> bool:
    """Optimization is sealed as completed: its reflection endpoint is no longer needed (nor checked)."""
    path = out / "optimization.json"
    return path.exists() and read_sealed(path).get("status") == "completed"


def _elapsed(out: Path) -> float | None:
    path = out / "optimization" / "timing.json"
    try:
        return float(read_json(path)["elapsed_seconds"])
    except (ArtifactError, KeyError, TypeError, ValueError):
        return None


def _usage_totals(records: list[RolloutRecord]) -> dict[str, Any]:
    def total(field: str) -> int | None:
        values = [getattr(r.usage, field) for r in records]
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    return {"rollouts": len(records), "model_calls": sum(r.usage.n_llm_calls for r in records),
            "tool_calls": sum(r.usage.n_tool_calls for r in records), "prompt_tokens": total("prompt_tokens"),
            "completion_tokens": total("completion_tokens"), "total_tokens": total("total_tokens")}


def summary_line(result: dict[str, Any]) -> dict[str, Any]:
    if result.get("status") == "phase_completed":
        return result
    test = result["test"]
    return {"status": result["status"], "cell_id": result["cell_id"], "baseline_mean": test["baseline_mean"],
            "deployed_mean": test["deployed_mean"], "delta_pp": test["delta_pp"],
            "valid_for_aggregation": test["valid_for_aggregation"],
            "fallback_reason": result["selection"]["fallback_reason"],
            "charged": result["optimization"]["budget"]["charged"],
            "failure_counts": test["failure_counts"], "protocol_conformant": result["protocol_conformant"],
            "endpoint_kind": result["endpoint_kind"]}
