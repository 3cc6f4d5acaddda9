"""The multi-process executor of one node (`sweep run --workers N`, N > 1): jobs in N worker processes.

The single-process executor (engine/sweep/local.py) is bound by one core: the engine's own work per model call
(prompt rendering, parsing, scoring, the store) runs on one event loop. Here the parent keeps the sweep and the
workers (engine/sweep/worker.py) run the jobs, each worker many of them concurrently on its own endpoint pool:

- Limits: every endpoint's in-flight limit holds across all workers through the parent's slot broker
  (engine/sweep/broker.py; a worker's slots are freed when it dies, kill -9 included).
- One sweep.sqlite, written by the parent only (job rows, attempts, live progress and heartbeats as with one
  process: the workers send their progress snapshots over their stdout). The shared evaluation cache, the job
  directories and their locks are the same files, safe across processes (file locks; the job lock is a flock the
  kernel drops when its process dies).
- A job is given to the worker with the fewest jobs; `--max-jobs` bounds the jobs running on the node. A job that
  raises, or whose worker dies, is a failed attempt, retried like any (on a live worker; a dead one is replaced)
  and it resumes from its own directory. Healing and resume are run_cmd's, unchanged.
- Cancellation (Ctrl-C, or the parent's cancellation): the workers get SIGTERM (Ctrl-C also reaches them as
  SIGINT), stop their jobs as one process would, and are killed if they have not exited after STOP_GRACE_S.
  A worker whose parent is gone (stdin closed) stops too.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pickle
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

import engine
from engine.progress import ProgressSnapshot
from engine.sweep.broker import SlotBroker
from engine.sweep.endpoints import Checked, EndpointSpec
from engine.sweep.evalcache import EvaluationCache
from engine.sweep.jobcall import JobSettings
from engine.sweep.live import LiveProgress
from engine.sweep.local import run_attempts
from engine.sweep.plan import JobSpec
from engine.sweep.progress import Progress
from engine.sweep.state import SweepState
from engine.sweep.worker import endpoints_dict, spec_dict
from optimizers.registry import uses_reflection

STOP_GRACE_S = 10.0
ROOT = Path(engine.__file__).resolve().parents[1]


class JobAttemptFailed(Exception):
    """The job raised in its worker (message: its error line), or its worker died."""


class Worker:
    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.reporters: dict[str, Any] = {}
        self.alive = True

    async def read(self) -> None:
        assert self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                msg = json.loads(line)
                key = msg["key"]
                if "progress" in msg:
                    if key in self.reporters:
                        self.reporters[key](ProgressSnapshot(**msg["progress"]))
                    continue
                future = self.pending.pop(key, None)
                if future is not None and not future.done():
                    future.set_result(msg)
        finally:
            self.alive = False
            code = await self.proc.wait()
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(JobAttemptFailed(f"WorkerDied: worker process {self.proc.pid} exited "
                                                          f"with code {code} while running the job"))
            self.pending.clear()

    async def run(self, spec: JobSpec, reporter: Any) -> dict[str, Any]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[spec.key], self.reporters[spec.key] = future, reporter
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps({"run": spec_dict(spec)}) + "\n").encode())
            await self.proc.stdin.drain()
        except (ConnectionError, RuntimeError):
            pass  # the worker is dying: `read` fails the future
        try:
            return await future
        finally:
            self.pending.pop(spec.key, None)
            self.reporters.pop(spec.key, None)


class Fleet:
    """Up to `size` live workers; a dead one is replaced when the next job needs a worker."""

    def __init__(self, size: int, init_path: Path, tg: TaskGroup):
        self.size, self.init_path, self.tg = size, init_path, tg
        self.workers: list[Worker] = []
        self._lock = anyio.Lock()

    async def pick(self) -> Worker:
        async with self._lock:
            self.workers = [w for w in self.workers if w.alive]
            while len(self.workers) < self.size:
                env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
                proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "engine.sweep.worker", str(self.init_path), stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE, env=env, limit=1 << 24)
                worker = Worker(proc)
                self.workers.append(worker)
                self.tg.start_soon(worker.read)
            return min(self.workers, key=lambda w: len(w.pending))

    async def stop(self) -> None:
        for w in self.workers:
            if w.proc.returncode is None:
                try:
                    w.proc.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for w in self.workers:
            with anyio.move_on_after(STOP_GRACE_S):
                await w.proc.wait()
            if w.proc.returncode is None:
                w.proc.kill()
                await w.proc.wait()


async def run_workers(specs: list[JobSpec], sweep_dir: Path, state: SweepState, settings: JobSettings,
                      endpoints: EndpointSpec, *, model_id: str, workers: int, max_jobs: int, job_retries: int,
                      cache: EvaluationCache | None, startup_timeout: float, progress: Progress,
                      checked: Checked | None = None) -> None:
    """Run `specs` to completion in `workers` processes (engine/sweep/local.py's contract: recorded, retried).
    `checked`: the sweep's start-up check of this pass, handed to every worker (pickled), which checks nothing
    again."""
    needs_reflection = any(uses_reflection(s.method) for s in specs)
    groups = len(endpoints.task_urls) + (1 if needs_reflection and endpoints.reflection_url is not None else 0)
    broker = SlotBroker([endpoints.limit] * groups)
    tmp = Path(tempfile.mkdtemp(prefix="mpb-sweep-"))  # short: a Unix socket path has at most 107 bytes
    init = {"settings": asdict(settings), "endpoints": endpoints_dict(endpoints), "model_id": model_id,
            "checked": base64.b64encode(pickle.dumps(checked)).decode() if checked is not None else None,
            "needs_reflection": needs_reflection, "startup_timeout": startup_timeout, "broker": str(tmp / "slots"),
            "sweep_dir": str(sweep_dir.resolve()), "cache_dir": str(cache.dir.resolve()) if cache else None}
    (tmp / "init.json").write_text(json.dumps(init, default=str), encoding="utf-8")
    jobs = anyio.CapacityLimiter(max_jobs)
    live = LiveProgress(state)
    await broker.start(str(tmp / "slots"))
    fleet: Fleet | None = None
    try:
        async with anyio.create_task_group() as outer:
            fleet = Fleet(max(1, min(workers, len(specs))), tmp / "init.json", outer)

            async def one(spec: JobSpec, fleet: Fleet) -> None:
                async def attempt(report: Callable[[ProgressSnapshot], None]) -> tuple[dict[str, Any], float | None]:
                    answer = await (await fleet.pick()).run(spec, report)
                    if "error" in answer:
                        raise JobAttemptFailed(answer["error"])
                    return answer["finished"], answer.get("delta_pp")

                async with jobs:
                    await run_attempts(spec, attempt, state=state, progress=progress, live=live,
                                       job_retries=job_retries, runs_dir=sweep_dir / "runs",
                                       failure=JobAttemptFailed, describe=str)

            outer.start_soon(live.run)
            async with anyio.create_task_group() as tg:
                for spec in specs:
                    tg.start_soon(one, spec, fleet)
            outer.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if fleet is not None:
                await fleet.stop()
            await broker.aclose()
        shutil.rmtree(tmp, ignore_errors=True)
