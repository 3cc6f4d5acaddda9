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

Totals: rollouts done / planned over the runnable jobs (planned per job as engine/sweep/cost.py counts it:
the search budget plus the seed and candidate evaluations on validation and test; a job that finished counts as
done), and an ETA = remaining rollouts / the rate of this run (rollouts completed by the jobs started since the
driver started, over the time since then).
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

from core.cell import parse_cell
from engine.progress import ProgressSnapshot
from engine.sweep.state import JobRow, ProgressRow, SweepState

STALE_AFTER_S = 60.0  # a heartbeat this old, with the job lock free, means the driver is gone
RUN_META = "live_run"  # meta: the driver of the latest `sweep run` (pid, host, started)


class LiveProgress:
    """The driver's side: snapshots in memory, flushed to sweep.sqlite by `run` (a task beside the jobs)."""

    def __init__(self, state: SweepState, interval: float = 1.0):
        self.state, self.interval = state, interval
        self._latest: dict[str, dict[str, Any]] = {}
        self.running: set[str] = set()

    def reporter(self, key: str) -> Callable[[ProgressSnapshot], None]:
        def report(snapshot: ProgressSnapshot) -> None:
            self._latest[key] = asdict(snapshot)
        return report

    async def flush(self) -> None:
        pending, self._latest = self._latest, {}  # taken on the event loop, where the reporters run
        await anyio.to_thread.run_sync(self.state.record_progress, pending, set(self.running))

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


def planned_rollouts(method: str, cell: str, budget: int, job_dir: Path | None = None) -> int | None:
    """The rollouts a job's runner will complete: the search budget, the seed bundle on validation and test, and
    the candidate's evaluations on both (None when the task's splits are unknown). Refined by the job's sealed
    artifacts as they appear: optimization.json gives the rollouts charged, and an incumbent equal to the seed
    bundle (its evaluations are the seed's, reused, none run); selection.json whether a candidate was evaluated
    on validation and whether the deployed bundle is the seed's (then the test has one arm to run)."""
    from core.artifacts import Optimization, Selection
    from engine.sweep.cost import split_sizes

    try:
        _, n_val, n_test = split_sizes(parse_cell(cell).task)
    except (OSError, ValueError, KeyError):
        return None
    if method == "identity":
        return n_val + n_test
    search, cand_val, cand_test = budget, n_val, n_test
    if job_dir is not None and (opt := _sealed(job_dir / "optimization.json", Optimization)) is not None:
        search = opt.budget.charged
        if opt.incumbent_bundle == opt.seed_bundle:
            cand_val = cand_test = 0
    if job_dir is not None and (sel := _sealed(job_dir / "selection.json", Selection)) is not None:
        if sel.candidate_validation_id in (None, sel.baseline_validation_id):
            cand_val = 0
        if sel.deployed_bundle == sel.seed_bundle:
            cand_test = 0
    return search + n_val + n_test + cand_val + cand_test


def _sealed(path: Path, model: Any) -> Any:
    from engine.job.artifacts import read_artifact

    if not path.is_file():
        return None
    try:
        return read_artifact(path, model).artifact
    except Exception:  # being written, or damaged: the job's own resume decides; here only a plan is refined
        return None


@dataclass(frozen=True)
class JobView:
    row: JobRow
    shown: str  # the status shown: the recorded one, `running` split into running / stale
    progress: ProgressRow | None
    planned: int | None

    @property
    def done(self) -> int:
        """Rollouts done; a job that ended (finished, failed) has none left to do: its plan is done."""
        snap = self.progress.snapshot if self.progress is not None else None
        if self.row.status in ("finished", "failed") and self.planned is not None:
            return self.planned
        return int(snap["rollouts"]) if snap else 0


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
    finally:
        state.close()
    now = time.time() if now is None else now
    budget = int((settings or {}).get("budget", 600))
    jobs = []
    for r in rows:
        prog = progress.get(r.key)
        shown = liveness(r, prog, sweep_dir, now) if r.status == "running" else r.status
        jobs.append(JobView(r, shown, prog, _planned(r, prog, sweep_dir, budget)))
    counts = {s: 0 for s in ("pending", "running", "stale", "finished", "degraded", "failed", "not_implemented")}
    for j in jobs:
        counts[j.shown] += 1
    runnable = [j for j in jobs if j.planned is not None]
    done = sum(min(j.done, j.planned or 0) for j in runnable)
    planned = sum(j.planned or 0 for j in runnable)
    rate = _run_rate(jobs, run)
    driver = driver_alive(run["pid"], run["host"]) if run else False
    ended = counts["running"] == 0 and driver is not True
    eta = round((planned - done) / rate, 1) if rate and not ended and planned > done else None
    return SweepView(jobs, counts, done, planned, rate, eta, now, ended)


def _planned(r: JobRow, prog: ProgressRow | None, sweep_dir: Path, budget: int) -> int | None:
    if r.status == "not_implemented":
        return None
    if r.status == "finished" and prog is not None and prog.snapshot:  # what it took (no artifact read)
        return int(prog.snapshot["rollouts"])
    return planned_rollouts(r.method, r.cell, budget, sweep_dir / r.directory if r.status != "pending" else None)


def _run_rate(jobs: list[JobView], run: dict[str, Any] | None) -> float | None:
    """Rollouts completed by the jobs this run started, over the time from its start to the last heartbeat."""
    if not run:
        return None
    mine = [j.progress for j in jobs if j.progress is not None and j.progress.started >= run["started"]]
    last = max((p.heartbeat for p in mine), default=run["started"])
    total = sum(int(p.snapshot["rollouts"]) for p in mine if p.snapshot)
    return round(total / (last - run["started"]), 3) if last - run["started"] > 1.0 and total else None
