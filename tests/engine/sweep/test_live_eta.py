"""The ETA's parts (engine/sweep/rate.py, remaining.py): the driver's moving-window rate of endpoint work, and the
work done and planned with the shared seed evaluations planned once per condition and seed."""

from __future__ import annotations

from pathlib import Path

from engine.sweep.cost import calls_per_rollout, split_sizes
from engine.sweep.rate import MIN_WINDOW_S, WorkRate, live_work
from engine.sweep.remaining import JobView, candidate_share, planned_rollouts, work
from engine.sweep.state import JobRow, ProgressRow

CELL = "task=bfcl,topology=single,model=qwen"
TEAM = "task=bfcl,topology=independent,model=qwen,communication=freeform,team_size=4"


def snap(rollouts: int, replayed: int = 0, shared: int = 0) -> dict[str, int]:
    return {"rollouts": rollouts, "replayed": replayed, "shared": shared}


def test_live_work_leaves_out_replayed_and_cache_answered_rollouts():
    assert live_work(snap(100, replayed=30, shared=50)) == 20
    assert live_work({"rollouts": 7}) == 7  # a snapshot of an engine before these counts
    assert live_work(snap(5, replayed=9)) == 0


def test_rate_is_the_slope_over_the_window_from_the_first_rollout():
    rate = WorkRate()
    for t in range(100, 111):  # start-up, one update a second: no work yet, no rate
        assert rate.update({"a": snap(0)}, float(t)) is None
    assert rate.update({"a": snap(10)}, 110.5) is None  # under a second since the work began
    assert rate.update({"a": snap(30)}, 112.0) == 15.0  # 30 rollouts since 110: the start-up is not counted
    for t in range(113, 400):  # a long steady stretch at 10/s: the window forgets the start
        r = rate.update({"a": snap(30 + 10 * (t - 112))}, float(t))
    assert r == 10.0


def test_rate_weighs_calls_and_keeps_a_retried_jobs_earlier_work():
    rate = WorkRate()
    rate.update({"a": snap(0), "b": snap(0)}, 0.0)
    rate.update({"a": snap(10), "b": snap(10)}, 1.0, {"a": 1.0, "b": 5.0})
    assert rate.update({"a": snap(20), "b": snap(20)}, 2.0, {"a": 1.0, "b": 5.0}) == 60.0  # (20 + 100) / 2 s
    # job b's attempt failed and a new attempt starts its counts again: the work done stays done
    assert rate.update({"a": snap(30), "b": snap(0)}, 3.0, {"a": 1.0, "b": 5.0}) == 43.333  # (30 + 100) / 3
    assert MIN_WINDOW_S >= 10


def view(key: str, method: str, cell: str, seed: int, status: str, planned: int | None,
         progress: dict[str, int] | None) -> JobView:
    row = JobRow(key, method, cell, seed, status, 1, f"runs/{key}", None, None, None)
    prog = None if progress is None else ProgressRow(key, 1, "h", 0.0, 1.0, progress)
    return JobView(row, status, prog, planned)


def test_seed_evaluations_are_planned_once_per_condition_and_seed(tmp_path: Path):
    _, n_val, n_test = split_sizes("bfcl")
    seed_evals = n_val + n_test
    gepa = planned_rollouts("gepa", CELL, 40, None, candidate_share=0.5)
    identity = planned_rollouts("identity", CELL, 40)
    assert identity == seed_evals and gepa == 40 + seed_evals + round(0.5 * n_val) + round(0.5 * n_test)
    pending = [view("g0", "gepa", CELL, 0, "pending", gepa, None), view("i0", "identity", CELL, 0, "pending", identity,
                                                                       None),
               view("g1", "gepa", CELL, 1, "pending", gepa, None)]
    done, planned, done_calls, planned_calls = work(pending)
    # seed 0: identity runs the seed evaluations, gepa is answered by the cache; seed 1: gepa alone runs them
    assert (done, planned) == (0, identity + (gepa - seed_evals) + gepa)
    assert (done_calls, planned_calls) == (0, planned * calls_per_rollout(CELL))
    # identity ended (its seed evaluations ran); gepa of seed 0 half way through its search, nothing from the cache yet
    mid = [view("g0", "gepa", CELL, 0, "running", gepa, snap(20)),
           view("i0", "identity", CELL, 0, "finished", identity, snap(identity))]
    assert work(mid)[:2] == (20 + identity, gepa - seed_evals + identity)
    # gepa finished too, its seed evaluations answered by the cache: done == planned == the live work
    end = [view("g0", "gepa", CELL, 0, "finished", 300, snap(300, shared=seed_evals)),
           view("i0", "identity", CELL, 0, "finished", identity, snap(identity))]
    assert work(end)[:2] == (300 - seed_evals + identity,) * 2


def test_heavier_cells_weigh_their_calls():
    assert calls_per_rollout(CELL) == 1 and calls_per_rollout(TEAM) == 5
    jobs = [view("a", "identity", CELL, 0, "running", 150, snap(50)),
            view("b", "identity", TEAM, 0, "running", 150, snap(50))]
    assert work(jobs) == (100, 300, 50 + 250, 150 + 750)


def test_candidate_share_starts_at_one_half_and_learns(tmp_path: Path):
    rows = [JobRow("g0", "gepa", CELL, 0, "pending", 0, "runs/g0", None, None, None)]
    assert candidate_share(rows, tmp_path) == 0.5


def test_a_poll_reads_each_sealed_artifact_once_and_a_rewrite_again(tmp_path: Path, monkeypatch):
    """candidate_share and planned_rollouts both ask for a job's optimization.json; one poll reads it once, the
    next poll not at all, and a new version of the file (atomically replaced) is read again."""
    import types

    import engine.job.artifacts as artifacts
    from engine.sweep import remaining

    reads: list[str] = []
    seed = {"solver": "seed"}

    def fake_read(path: Path, model: object) -> types.SimpleNamespace:
        reads.append(path.name)
        found = path.read_text() == "found"
        opt = types.SimpleNamespace(incumbent_bundle={"solver": "new"} if found else seed, seed_bundle=seed,
                                    budget=types.SimpleNamespace(charged=40))
        return types.SimpleNamespace(artifact=opt)

    monkeypatch.setattr(artifacts, "read_artifact", fake_read)
    remaining._read_sealed.cache_clear()
    job_dir = tmp_path / "runs" / "g0"
    job_dir.mkdir(parents=True)
    (job_dir / "optimization.json").write_text("seed")
    rows = [JobRow("g0", "gepa", CELL, 0, "running", 1, "runs/g0", None, None, None)]
    for _ in range(3):  # three polls
        assert candidate_share(rows, tmp_path) == 1 / 3
        assert planned_rollouts("gepa", CELL, 40, job_dir, 1 / 3) == 40 + sum(split_sizes("bfcl")[1:])
    assert reads == ["optimization.json"]
    tmp = job_dir / "optimization.json.tmp"
    tmp.write_text("found!")  # a new version, of another size
    tmp.replace(job_dir / "optimization.json")
    (job_dir / "optimization.json").write_text("found")
    assert candidate_share(rows, tmp_path) == 2 / 3
    assert reads == ["optimization.json", "optimization.json"]
    remaining._read_sealed.cache_clear()
