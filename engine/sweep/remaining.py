"""What is left of a sweep: each job's planned rollouts and the sweep's endpoint work done and planned.

A job's plan is the search budget plus its evaluations (engine/sweep/cost.py counts the same), refined by its
sealed artifacts as they appear (`planned_rollouts`). The sweep's totals count endpoint work (`work`): what was
replayed from a store or answered by the shared evaluation cache is no work, the seed bundle's evaluations of a
condition and seed are planned once (the cache runs them once), and a candidate's evaluations count the share of
jobs expected to have one (`candidate_share`) until the job's search is sealed. `sweep status` reads them through
engine/sweep/live.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.cell import parse_cell
from engine.sweep.state import JobRow, ProgressRow

ENDED = ("finished", "failed")  # a job with nothing left to do


def planned_rollouts(method: str, cell: str, budget: int, job_dir: Path | None = None,
                     candidate_share: float = 1.0) -> int | None:
    """The rollouts a job's runner will complete: the search budget, the seed bundle on validation and test, and
    the candidate's evaluations on both (None when the task's splits are unknown). Refined by the job's sealed
    artifacts as they appear: optimization.json gives the rollouts charged, and an incumbent equal to the seed
    bundle (its evaluations are the seed's, reused, none run); selection.json whether a candidate was evaluated
    on validation and whether the deployed bundle is the seed's (then the test has one arm to run). Before
    optimization.json, the candidate's evaluations count `candidate_share` of their rows: the expected share
    (1.0, an upper bound, unless the caller knows better)."""
    from core.artifacts import Optimization, Selection
    from engine.sweep.cost import split_sizes

    try:
        _, n_val, n_test = split_sizes(parse_cell(cell).task)
    except (OSError, ValueError, KeyError):
        return None
    if method == "identity":
        return n_val + n_test
    search, cand_val, cand_test = budget, round(candidate_share * n_val), round(candidate_share * n_test)
    if job_dir is not None and (opt := _sealed(job_dir / "optimization.json", Optimization)) is not None:
        search = opt.budget.charged
        cand_val, cand_test = (0, 0) if opt.incumbent_bundle == opt.seed_bundle else (n_val, n_test)
    if job_dir is not None and (sel := _sealed(job_dir / "selection.json", Selection)) is not None:
        if sel.candidate_validation_id in (None, sel.baseline_validation_id):
            cand_val = 0
        if sel.deployed_bundle == sel.seed_bundle:
            cand_test = 0
    return search + n_val + n_test + cand_val + cand_test


def _sealed(path: Path, model: Any) -> Any:
    """The sealed artifact at `path`, or None. Read once per version of the file (path, size and mtime): a poll
    of `sweep status` asks for each optimization.json twice (`candidate_share`, `planned_rollouts`), and every
    poll asks again for the artifacts of jobs that ended long ago."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return _read_sealed(str(path), model, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8192)
def _read_sealed(path: str, model: Any, mtime_ns: int, size: int) -> Any:
    from engine.job.artifacts import read_artifact

    try:
        return read_artifact(Path(path), model).artifact
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
        if self.row.status in ENDED and self.planned is not None:
            return self.planned
        return int(snap["rollouts"]) if snap else 0

    @property
    def free(self) -> int:
        """Of `done`, the rollouts that were no endpoint work: replayed from the job's store (a resume) or answered
        by the shared evaluation cache (snapshots of engines before these counts: none)."""
        snap = self.progress.snapshot if self.progress is not None else None
        return int(snap.get("replayed", 0)) + int(snap.get("shared", 0)) if snap else 0


def candidate_share(rows: list[JobRow], sweep_dir: Path) -> float:
    """The expected share of optimizing jobs whose search ends with a candidate other than the seed bundle (the
    candidate is then evaluated on validation, and maybe on test): (found + 1) / (sealed + 2) over this sweep's
    jobs whose optimization.json is sealed (Laplace's rule: 1/2 before any is)."""
    from core.artifacts import Optimization

    found = sealed = 0
    for r in rows:
        if r.method != "identity" and r.status != "pending" and (
                opt := _sealed(sweep_dir / r.directory / "optimization.json", Optimization)) is not None:
            sealed += 1
            found += opt.incumbent_bundle != opt.seed_bundle
    return (found + 1) / (sealed + 2)


def planned_for(r: JobRow, prog: ProgressRow | None, sweep_dir: Path, budget: int, share: float) -> int | None:
    if r.status == "not_implemented":
        return None
    if r.status == "finished" and prog is not None and prog.snapshot:  # what it took (no artifact read)
        return int(prog.snapshot["rollouts"])
    return planned_rollouts(r.method, r.cell, budget, sweep_dir / r.directory if r.status != "pending" else None,
                            share)


def work(jobs: list[JobView]) -> tuple[int, int, int, int]:
    """Endpoint work done and planned, in rollouts and in model calls (each rollout weighs its cell's calls per
    rollout, engine/sweep/cost.calls_per_rollout). The seed bundle's validation and test evaluations of a
    condition and seed are the same for every method, and the shared evaluation cache runs them once: in each
    group of jobs of one cell and seed, the job with the smallest plan (it reaches them first; identity is only
    them) is expected to run them and the others to be answered by the cache; once a job of the group has ended,
    all the others are. A job that ended planned exactly what it did."""
    from engine.sweep.cost import calls_per_rollout, split_sizes

    groups: dict[tuple[str, int], list[JobView]] = {}
    for j in jobs:
        groups.setdefault((j.row.cell, j.row.seed), []).append(j)
    done = planned = done_calls = planned_calls = 0
    for (cell, _), members in groups.items():
        _, n_val, n_test = split_sizes(parse_cell(cell).task)
        calls = calls_per_rollout(cell)
        open_ = [j for j in members if j.row.status not in ENDED]
        runs_them = None if len(open_) < len(members) else min(open_, key=lambda j: j.planned or 0)
        for j in members:
            mine = max(0, min(j.done, j.planned or 0) - j.free)
            future_free = 0 if j.row.status in ENDED or j is runs_them else max(0, n_val + n_test - j.free)
            plan = max(mine, (j.planned or 0) - j.free - future_free)
            done, planned = done + mine, planned + plan
            done_calls, planned_calls = done_calls + mine * calls, planned_calls + plan * calls
    return done, planned, done_calls, planned_calls
