"""The one narrow entry through which a sweep runs a job (so a restructured engine/job needs one change here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.artifacts import JobResult
from core.protocol import FULL_BUDGET
from engine.chat.endpoint import EndpointPool
from engine.job.config import JobConfig, build_config
from engine.job.evaluation import SharedEvaluations
from engine.progress import ProgressSnapshot
from engine.sweep.plan import JobSpec


@dataclass(frozen=True)
class JobSettings:
    """Settings every job of a sweep shares (persisted in sweep.sqlite: a sweep dir holds one set of them)."""

    budget: int = 600
    allow_small_budget: bool = False
    model_id: str | None = None
    reflection_model: str | None = None
    concurrency: int = 64
    request_timeout: float = 1200.0
    simulated: bool = False  # endpoints are the built-in simulated policy: jobs are labelled simulated
    max_outage: float = 900.0
    dataset_options: dict[str, Any] = field(default_factory=dict)
    smoke: int | None = None  # `sweep run --smoke N`: every job a smoke run on N rows per split (engine/job/smoke.py)
    routing: str | None = None  # `sweep run --routing`: the shared pools' (engine/chat/routing.py); None: the default

    def as_dict(self) -> dict[str, Any]:
        smoke = {} if self.smoke is None else {"smoke": self.smoke}  # absent for a full sweep: old dirs still match
        return {"budget": self.budget, "allow_small_budget": self.allow_small_budget, "model_id": self.model_id,
                "reflection_model": self.reflection_model, "simulated": self.simulated,
                "dataset_options": self.dataset_options, **smoke}

    @property
    def job_budget(self) -> int | None:
        """A smoke sweep at the default budget runs each job at its method's smoke budget (None: not given)."""
        return None if self.smoke is not None and self.budget == FULL_BUDGET else self.budget


def job_config(spec: JobSpec, runs_dir: Path, settings: JobSettings, task_urls: list[str],
               reflection_url: str | None) -> JobConfig:
    cfg = build_config(
        cell=spec.cell, method=spec.method, seed=spec.seed, out=str(runs_dir / spec.key), budget=settings.job_budget,
        task_endpoints=[] if settings.simulated else list(task_urls), model_id=settings.model_id,
        data_dir=spec.data_dir, concurrency=settings.concurrency, reflection_endpoint=reflection_url,
        reflection_model=settings.reflection_model, allow_small_budget=settings.allow_small_budget, quiet=True,
        request_timeout=settings.request_timeout, allow_any_cell=spec.allow_any_cell,
        dataset_options=settings.dataset_options, max_outage=settings.max_outage, smoke=settings.smoke)
    # simulated: the job is labelled so (not read from TASK_ENDPOINTS); its calls still go to the sweep's pool
    return replace(cfg, task_endpoints=()) if settings.simulated else cfg


async def run_spec(spec: JobSpec, runs_dir: Path, settings: JobSettings, pool: EndpointPool,
                   reflection: EndpointPool | None, shared: SharedEvaluations | None,
                   on_progress: Callable[[ProgressSnapshot], None] | None = None) -> JobResult:
    """Run (or resume) one job of the sweep on the sweep's shared pool; returns its result.json (a sweep's jobs
    run every phase).
    `on_progress` gets the job's throttled progress snapshots (engine/sweep/live.py records them)."""
    from engine.job.run_job import run_job

    cfg = job_config(spec, runs_dir, settings, [e.base_url for e in pool.endpoints],
                     reflection.endpoints[0].base_url if reflection is not None else None)
    result = await run_job(cfg, shared_pool=pool, shared_reflection=reflection, shared_evaluations=shared,
                           on_progress=on_progress)
    assert isinstance(result, JobResult), "a sweep's job runs every phase"
    return result


def headline(result: JobResult) -> dict[str, Any]:
    """What `sweep status` shows of a finished job (recorded in sweep.sqlite)."""
    budget = result.optimization.budget
    return {"baseline_mean": result.test.baseline_mean, "deployed_mean": result.test.deployed_mean,
            "delta_pp": result.test.delta_pp, "fallback_reason": result.selection.fallback_reason,
            "charged": None if budget is None else budget.charged}


def degraded_reasons(spec: JobSpec, runs_dir: Path) -> list[str]:
    """Why a job that returned is still unfinished by infrastructure failures (a re-run heals it); [] when it is
    finished (engine/job/recovery.py decides, for a sweep as for one job)."""
    from engine.job.recovery import unfinished

    return unfinished(runs_dir / spec.key)[0]
