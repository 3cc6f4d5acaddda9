"""The Ray executor (optional extra `ray`): the sweep's job specs as Ray tasks on an existing cluster.

- Explicit address only: `--address ray://host:10001` / `host:6379` for a running cluster, or `local` for a private
  one-machine instance (`ray.init(address="local")`, no dashboard). Never `auto`: on shared Slurm nodes that can
  attach to another user's cluster (anchors.md C; RLinf#463).
- One task per job (num_cpus=0.5: jobs are I/O bound). The driver keeps at most --max-jobs in flight and gives each
  task an equal share of every endpoint's in-flight limit, so the per-endpoint limit holds across the cluster.
  Limit semantics: the same bound as `--workers N` on one node (never more than --limit requests in flight per
  endpoint), but held by a static split, floor(limit / tasks in flight), not by a shared broker
  (engine/sweep/broker.py): a task between phases idles its share, and with more tasks in flight than the limit
  each gets 1 (the sum may then exceed the limit). On one node prefer the local executor with --workers.
- A lost worker (node death, OOM kill) is retried by Ray (`max_retries`, system failures only); a job that raises
  is returned as a failure and resubmitted by the driver up to --job-retries, and it resumes from its own
  directory. Only the driver writes sweep.sqlite; results land in the shared sweep directory (a path every node
  sees, e.g. NFS/Lustre), shared evaluations under its file locks.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio

from core.artifacts import JobResult
from core.errors import UsageError
from engine.sweep.endpoints import Checked, EndpointSpec, open_shared
from engine.sweep.evalcache import EvaluationCache
from engine.sweep.jobcall import JobSettings, degraded_reasons, headline, run_spec
from engine.sweep.plan import JobSpec
from engine.sweep.progress import Progress
from engine.sweep.state import SweepState
from optimizers.registry import uses_reflection

LOST_WORKER_RETRIES = 3


def job_task(spec: dict[str, Any], sweep_dir: str, settings: dict[str, Any], endpoints: dict[str, Any],
             model_id: str, cache_dir: str | None, startup_timeout: float,
             checked: Checked | None = None) -> tuple[str, Any]:
    """Runs on a Ray worker: one job on its own share of the endpoints. Returns ("finished", its JobResult,
    pickled by Ray) or ("failed", error line); raises only for what Ray should retry (the worker's death)."""
    from engine.sweep.local import error_line

    job = JobSpec(**{**spec, "tables": tuple(spec["tables"])})
    cfg = JobSettings(**settings)
    ep = EndpointSpec(task_urls=tuple(endpoints["task_urls"]), reflection_url=endpoints["reflection_url"],
                      limit=int(endpoints["limit"]), max_outage=float(endpoints["max_outage"]),
                      events=Path(endpoints["events"]) if endpoints["events"] else None)

    async def run() -> JobResult:
        async with AsyncExitStack() as stack:
            pool, reflection = await open_shared(
                stack, ep, model_id=model_id,
                reflection_model=cfg.reflection_model if uses_reflection(job.method) else None,
                request_timeout=cfg.request_timeout, startup_timeout=startup_timeout, checked=checked)
            cache = EvaluationCache(Path(cache_dir), job.key) if cache_dir else None
            return await run_spec(job, Path(sweep_dir) / "runs", cfg, pool, reflection, cache)

    try:
        return "finished", anyio.run(run)
    except Exception as exc:  # a job's failure is data for the driver, not a Ray task failure
        return "failed", error_line(exc)


def _connect(address: str, local_cpus: int | None) -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs the `ray` extra: pip install '.[ray]'") from None
    if address in ("auto", ""):
        raise UsageError("--address auto is refused: name the cluster (host:port or ray://host:10001) or `local`")
    if address == "local":
        ray.init(address="local", num_cpus=local_cpus, include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)
    return ray


def run_ray(todo: list[JobSpec], sweep_dir: Path, state: SweepState, settings: JobSettings,
            endpoints: EndpointSpec, *, model_id: str, address: str, max_jobs: int, job_retries: int,
            cache: EvaluationCache | None, startup_timeout: float, progress: Progress,
            local_cpus: int | None = None, checked: Checked | None = None) -> None:
    """`checked`: the driver's start-up check of this pass, sent to every task (workers check nothing again)."""
    ray = _connect(address, local_cpus)
    try:
        in_flight = max(1, min(max_jobs, len(todo)))
        share = {"task_urls": list(endpoints.task_urls), "reflection_url": endpoints.reflection_url,
                 "limit": max(1, endpoints.limit // in_flight), "max_outage": endpoints.max_outage,
                 "events": str(endpoints.events.resolve()) if endpoints.events else None}
        settings_d = {**asdict(settings), "concurrency": max(1, settings.concurrency // in_flight)}
        remote = ray.remote(job_task).options(num_cpus=0.5, max_retries=LOST_WORKER_RETRIES,
                                              retry_exceptions=False)
        cache_dir = str(cache.dir.resolve()) if cache is not None else None
        waiting = list(todo)
        running: dict[Any, JobSpec] = {}

        def submit(job: JobSpec) -> None:
            progress.started(job.key, state.start(job.key))
            spec = {k: v for k, v in asdict(job).items() if k != "extra"}
            running[remote.remote(spec, str(sweep_dir.resolve()), settings_d, share, model_id, cache_dir,
                                  startup_timeout, checked)] = job

        tries: dict[str, int] = {}
        while waiting or running:
            while waiting and len(running) < in_flight:
                submit(waiting.pop(0))
            ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in ready:
                job = running.pop(ref)
                try:
                    status, value = ray.get(ref)
                except Exception as exc:  # the worker was lost more often than Ray retries
                    status, value = "failed", f"{type(exc).__name__}: {str(exc)[:500]}"
                if status == "finished":
                    degraded = degraded_reasons(job, sweep_dir / "runs")
                    state.finish(job.key, headline(value), degraded)
                    progress.finished(job.key, value.test.delta_pp, degraded)
                    continue
                tries[job.key] = tries.get(job.key, 0) + 1
                final = tries[job.key] > job_retries
                state.fail(job.key, str(value), final)
                progress.failed_attempt(job.key, str(value), final)
                if not final:
                    waiting.append(job)
    finally:
        ray.shutdown()
