"""The local executor: many jobs concurrently in one process, all on one shared endpoint pool.

Jobs are I/O bound: while one waits on its own sequential steps (an optimizer's next proposal, a selection), the
others keep the endpoints busy; the in-flight limit is per endpoint and shared by every job (engine/chat
`Endpoint.limiter`). A job that raises is recorded with its error and retried (it resumes from its own directory)
up to `job_retries` more times; it never stops the sweep. Cancellation (Ctrl-C) propagates: running jobs stop,
their rows stay `running`, and the next run resumes them from their stores. Each job's progress and a heartbeat
are recorded in sweep.sqlite while it runs (engine/sweep/live.py) for `sweep status`.
With `sweep run --workers N` (N > 1) run_cmd uses engine/sweep/workers.py instead: the same contract in N worker
processes, the endpoints' limits held across them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from engine.chat.auth import scrub
from engine.chat.endpoint import EndpointPool
from engine.chat.routing import default_routing
from engine.progress import ProgressSnapshot
from engine.sweep.cost import calls_per_rollout
from engine.sweep.endpoints import Checked, EndpointSpec, open_shared
from engine.sweep.evalcache import EvaluationCache
from engine.sweep.jobcall import JobSettings, degraded_reasons, headline, run_spec
from engine.sweep.live import LiveProgress
from engine.sweep.plan import JobSpec
from engine.sweep.progress import Progress
from engine.sweep.state import SweepState
from optimizers.registry import uses_reflection


def error_line(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup):  # the first leaf names the cause
        exc = exc.exceptions[0]
    return " ".join(scrub(f"{type(exc).__name__}: {exc}").split())


async def run_attempts(spec: JobSpec, attempt: Callable[[Callable[[ProgressSnapshot], None]],
                                                 Awaitable[tuple[dict[str, Any], float | None]]],
                       *, state: SweepState, progress: Progress, live: LiveProgress, job_retries: int,
                       runs_dir: Path, failure: type[Exception] = Exception,
                       describe: Callable[[BaseException], str] = error_line) -> None:
    """One job's attempts, for every executor: each recorded as started, its live progress reported, a `failure`
    recorded (described by `describe`) and retried up to `job_retries` more times, a success recorded with its
    headline (`attempt(report)` returns it and the delta_pp) and whether infrastructure failures left it degraded."""
    for attempt_index in range(job_retries + 1):
        number = await anyio.to_thread.run_sync(state.start, spec.key)
        progress.started(spec.key, number)
        live.running.add(spec.key)
        try:
            shown, delta_pp = await attempt(live.reporter(spec.key, calls_per_rollout(spec.cell)))
        except failure as exc:  # a job's failure is data: recorded, retried, never the sweep's
            final = attempt_index == job_retries
            await anyio.to_thread.run_sync(state.fail, spec.key, describe(exc), final)
            progress.failed_attempt(spec.key, describe(exc), final)
            continue
        finally:
            live.running.discard(spec.key)
        degraded = await anyio.to_thread.run_sync(degraded_reasons, spec, runs_dir)
        await anyio.to_thread.run_sync(state.finish, spec.key, shown, degraded)
        progress.finished(spec.key, delta_pp, degraded)
        return


async def run_local(specs: list[JobSpec], sweep_dir: Path, state: SweepState, settings: JobSettings,
                    endpoints: EndpointSpec, *, model_id: str, max_jobs: int, job_retries: int,
                    cache: EvaluationCache | None, startup_timeout: float, progress: Progress,
                    observe: Callable[[EndpointPool], Coroutine[Any, Any, None]] | None = None,
                    checked: Checked | None = None) -> None:
    """Run `specs` to completion; `observe(pool)` (benchmarks: in-flight sampling) runs beside them and is
    cancelled when they are done. `checked`: the sweep's start-up check of this pass (None: check here)."""
    needs_reflection = any(uses_reflection(s.method) for s in specs)
    async with AsyncExitStack() as stack:
        with default_routing(settings.routing):  # `sweep run --routing`
            pool, reflection = await open_shared(
                stack, endpoints, model_id=model_id,
                reflection_model=settings.reflection_model if needs_reflection else None,
                request_timeout=settings.request_timeout, startup_timeout=startup_timeout, checked=checked)
        jobs = anyio.CapacityLimiter(max_jobs)
        live = LiveProgress(state)

        async def one(spec: JobSpec) -> None:
            async def attempt(report: Callable[[ProgressSnapshot], None]) -> tuple[dict[str, Any], float | None]:
                result = await run_spec(spec, sweep_dir / "runs", settings, pool, reflection,
                                        cache.for_job(spec.key) if cache is not None else None, report)
                return headline(result), result.test.delta_pp

            async with jobs:
                await run_attempts(spec, attempt, state=state, progress=progress, live=live,
                                   job_retries=job_retries, runs_dir=sweep_dir / "runs")

        async with anyio.create_task_group() as outer:
            outer.start_soon(live.run)
            if observe is not None:
                outer.start_soon(observe, pool)
            async with anyio.create_task_group() as tg:
                for spec in specs:
                    tg.start_soon(one, spec)
            outer.cancel_scope.cancel()
