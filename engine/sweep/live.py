"""Live sweeps: what each running job is doing, recorded in sweep.sqlite, and how `sweep status` reads it.

Recording (the driver): every job gets a `reporter` (engine/progress.py calls it with a `ProgressSnapshot` at each
phase start and end and at most once a second otherwise; the job never imports the sweep). The reporter only keeps
the latest snapshot in memory; one task (`LiveProgress.run`) writes the new ones, and a heartbeat for every running
job, in one transaction per `interval` (1 s) from a worker thread. So SQLite sees at most one write per job per
second, never one per call, and the event loop never waits on it.

Reading (`sweep status`, any process): a row `running` in `jobs` is
- `running` while its job lock (runs/<key>/.job.lock, an exclusive flock the job holds from the moment its store
  opens, engine/job/lock.job_lock) is held: the kernel drops a flock when its process dies, so a held lock is a
  live holder. The probe takes a shared lock for an instant (job_lock retries for 0.2 s, so a job starting at that
  instant is not refused);
- still `running` while the lock is free but the driver that started it is alive (the job is opening its store,
  or returning) and its heartbeat is fresh;
- `stale` otherwise: the driver is gone (kill -9, a lost node) and the row waits for the next `sweep run`, which
  resumes it. A driver on another host (Ray) cannot be asked: there a heartbeat older than STALE_AFTER_S decides.

Totals count endpoint work: rollouts done / planned over the runnable jobs (planned per job as engine/sweep/cost.py
counts it: the search budget plus the seed and candidate evaluations on validation and test, the seed bundle's two
counted once per condition and seed because the shared evaluation cache runs them once; done leaves out what was
replayed from a store or answered by the shared cache; a job that finished counts as done; a candidate's
evaluations count the expected share, `candidate_share`, until the job's search is sealed), and an ETA = remaining
rollouts / the current rate (engine/sweep/rate.py: the driver's moving-window rate while it is alive; else the
endpoint work of the jobs this run started over the time since the first of them started).
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio

from engine.progress import ProgressSnapshot
from engine.sweep.rate import RATE_META, WorkRate, live_work
from engine.sweep.remaining import JobView, candidate_share, planned_for, work
from engine.sweep.state import JobRow, ProgressRow, SweepState

STALE_AFTER_S = 60.0  # a heartbeat this old, with the job lock free, means the driver is gone
RUN_META = "live_run"  # meta: the driver of the latest `sweep run` (pid, host, started)


class LiveProgress:
    """The driver's side: snapshots in memory, flushed to sweep.sqlite by `run` (a task beside the jobs)."""

    def __init__(self, state: SweepState, interval: float = 1.0):
        self.state, self.interval = state, interval
        self._latest: dict[str, dict[str, Any]] = {}
        self.running: set[str] = set()
        self.rate = WorkRate()
        self._weights: dict[str, float] = {}

    def reporter(self, key: str, weight: float = 1.0) -> Callable[[ProgressSnapshot], None]:
        """`weight`: the job's model calls per rollout (engine/sweep/cost.calls_per_rollout), for the rate."""
        self._weights[key] = weight

        def report(snapshot: ProgressSnapshot) -> None:
            self._latest[key] = asdict(snapshot)
        return report

    async def flush(self) -> None:
        pending, self._latest = self._latest, {}  # taken on the event loop, where the reporters run
        now = time.time()
        rate = self.rate.update(pending, now, self._weights)
        await anyio.to_thread.run_sync(self.state.record_progress, pending, set(self.running))
        await anyio.to_thread.run_sync(self.state.set_meta, RATE_META, {"rate": rate, "at": now})

    async def run(self) -> None:
        """Until cancelled: flush every `interval`; a last flush when cancelled (the jobs' final snapshots)."""
        await anyio.to_thread.run_sync(self.state.set_meta, RUN_META,
                                       {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()})
        try:
            while True:
                await anyio.sleep(self.interval)
                await self.flush()
        finally:
            with anyio.CancelScope(shield=True):
                await self.flush()


# ---------------------------------------------------------------------------------------------- reading


def lock_held(path: Path) -> bool:
    """True while a live process holds the job's exclusive lock (a shared probe is refused)."""
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return False
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return False


def driver_alive(pid: int, host: str) -> bool | None:
    """Whether the process `pid` on `host` lives; None when `host` is another machine."""
    if host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def liveness(row: JobRow, prog: ProgressRow | None, sweep_dir: Path, now: float) -> str:
    """`running` or `stale` for a row whose recorded status is running (rules in the module docstring)."""
    if lock_held(sweep_dir / row.directory / ".job.lock"):
        return "running"
    if prog is None:  # started by an engine that kept no progress: only the lock can tell
        return "stale"
    fresh = now - prog.heartbeat < STALE_AFTER_S
    alive = driver_alive(prog.pid, prog.host)
    return "running" if fresh and alive is not False else "stale"


@dataclass(frozen=True)
class SweepView:
    jobs: list[JobView]
    counts: dict[str, int]
    done: int
    planned: int
    rate: float | None  # rollouts/s of the current (or last) run
    eta: float | None  # seconds, while something runs
    now: float
    ended: bool  # nothing runs and the driver is gone: a watch stops

    def to_json(self) -> dict[str, Any]:
        return {"counts": self.counts, "rollouts_done": self.done, "rollouts_planned": self.planned,
                "rate_per_s": self.rate, "eta_s": self.eta, "ended": self.ended,
                "jobs": [{**j.row.__dict__, "shown": j.shown, "planned": j.planned, "done": j.done,
                          "heartbeat_age_s": round(self.now - j.progress.heartbeat, 1) if j.progress else None,
                          "progress": j.progress.snapshot if j.progress else None} for j in self.jobs]}


def read_sweep(sweep_dir: Path, now: float | None = None) -> SweepView:
    state = SweepState(sweep_dir / "sweep.sqlite")
    try:
        rows, progress, settings, run = state.rows(), state.progress(), state.meta("settings"), state.meta(RUN_META)
        measured = state.meta(RATE_META)
    finally:
        state.close()
    now = time.time() if now is None else now
    budget = int((settings or {}).get("budget", 600))
    share = candidate_share(rows, sweep_dir)
    jobs = []
    for r in rows:
        prog = progress.get(r.key)
        shown = liveness(r, prog, sweep_dir, now) if r.status == "running" else r.status
        jobs.append(JobView(r, shown, prog, planned_for(r, prog, sweep_dir, budget, share)))
    counts = {s: 0 for s in ("pending", "running", "stale", "finished", "degraded", "failed", "not_implemented")}
    for j in jobs:
        counts[j.shown] += 1
    runnable = [j for j in jobs if j.planned is not None]
    done, planned, done_calls, planned_calls = work(runnable)
    driver = driver_alive(run["pid"], run["host"]) if run else False
    fresh = measured and measured.get("rate") and now - float(measured["at"]) < STALE_AFTER_S and driver is not False
    calls_rate = float(measured["rate"]) if fresh else _run_rate(jobs, run)  # model calls/s
    rate = round(calls_rate * done / done_calls, 3) if calls_rate and done_calls else None  # rollouts/s, shown
    ended = counts["running"] == 0 and driver is not True
    eta = (round((planned_calls - done_calls) / calls_rate, 1)
           if calls_rate and not ended and planned_calls > done_calls else None)
    return SweepView(jobs, counts, done, planned, rate, eta, now, ended)


def _run_rate(jobs: list[JobView], run: dict[str, Any] | None) -> float | None:
    """Endpoint work in model calls (rollouts completed live, not replayed or answered by the shared cache) of the jobs this run
    started, over the time from the first of them starting to the last heartbeat (the driver's own start-up, the
    endpoints' preflight, is no rate)."""
    if not run:
        return None
    from engine.sweep.cost import calls_per_rollout

    mine = [j for j in jobs if j.progress is not None and j.progress.started >= run["started"]]
    if not mine:
        return None
    first = min(j.progress.started for j in mine if j.progress is not None)
    last = max(j.progress.heartbeat for j in mine if j.progress is not None)
    total = sum(live_work(j.progress.snapshot) * calls_per_rollout(j.row.cell)
                for j in mine if j.progress and j.progress.snapshot)
    return round(total / (last - first), 3) if last - first > 1.0 and total > 0 else None
