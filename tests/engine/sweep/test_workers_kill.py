"""Deaths under `sweep run --workers 2`: a worker killed (kill -9) mid-job is a failed attempt, retried, and the
sweep finishes; the parent killed mid-sweep takes its workers with it (they see their stdin close), and the next
`sweep run` resumes. Either way every job's record equals the uninterrupted one-process sweep's."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engine.sweep.sweeputil import ROOT, SELECTION, as_in_a_terminal, model_requests, plan_keys, sweep
from tests.engine.sweep.test_workers import endpoint_args, job_record, servers

MID_SWEEP = 400  # requests answered when the kill lands (the whole sweep sends about 2,500)


def resumed(record: dict) -> dict:
    """A job's record with its card's count of rollouts only: a resumed job's card also records the interrupted
    run (its start, the resume, the nodes of the rollouts cut short); what it decided and measured is the same."""
    return {**record, "card": {"rollouts": record["card"]["rollouts"]}}


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def start(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "engine", "sweep", *args], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=as_in_a_terminal,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def wait_for_workers(proc: subprocess.Popen[bytes], sims: list, answered: int) -> set[int]:
    """The worker pids once the endpoints have answered `answered` requests and two workers run."""
    deadline = time.monotonic() + 200
    while time.monotonic() < deadline and proc.poll() is None:
        workers = children(proc.pid)
        if len(workers) >= 2 and sum(len(model_requests(s.log)) for s in sims) >= answered:
            return workers
        time.sleep(0.02)
    raise AssertionError("the sweep ended (or never started two workers) before the kill")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("reference")
    sims = servers(0.0)
    try:
        proc = sweep("run", "--sweep-dir", str(root / "sw"), *SELECTION, *endpoint_args(sims), "--workers", "1",
                     "--no-aggregate")
    finally:
        for s in sims:
            s.stop()
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {j["key"]: job_record(root / "sw" / "runs" / j["key"]) for j in plan_keys(*SELECTION)}


def attempts(sweep_dir: Path) -> dict[str, tuple[str, int]]:
    db = sqlite3.connect(str(sweep_dir / "sweep.sqlite"))
    try:
        return {k: (s, n) for k, s, n in db.execute("SELECT key, status, attempts FROM jobs")}
    finally:
        db.close()


def test_a_worker_killed_mid_job_is_a_retried_attempt_and_the_sweep_finishes(tmp_path, reference):
    sims = servers(0.01)
    sw = tmp_path / "sw"
    try:
        proc = start(["run", "--sweep-dir", str(sw), *SELECTION, *endpoint_args(sims), "--workers", "2",
                      "--no-aggregate"])
        victim = min(wait_for_workers(proc, sims, MID_SWEEP))
        os.kill(victim, signal.SIGKILL)
        assert proc.wait(timeout=300) == 0
    finally:
        for s in sims:
            s.stop()
    rows = attempts(sw)
    assert {s for s, _ in rows.values()} == {"finished"}
    assert max(n for _, n in rows.values()) == 2, "the killed worker's jobs are retried once"
    for key, record in reference.items():
        assert resumed(job_record(sw / "runs" / key)) == resumed(record), key


def test_the_parent_killed_takes_its_workers_and_the_next_run_resumes(tmp_path, reference):
    sims = servers(0.01)
    sw = tmp_path / "sw"
    args = ["run", "--sweep-dir", str(sw), *SELECTION, *endpoint_args(sims), "--workers", "2", "--no-aggregate"]
    try:
        proc = start(args)
        workers = wait_for_workers(proc, sims, MID_SWEEP)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 30
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(w) for w in workers), "a worker outlived its parent"
        assert "running" in {s for s, _ in attempts(sw).values()}
        done = sweep(*args)
        assert done.returncode == 0, done.stderr[-2000:]
    finally:
        for s in sims:
            s.stop()
    assert {s for s, _ in attempts(sw).values()} == {"finished"}
    for key, record in reference.items():
        assert resumed(job_record(sw / "runs" / key)) == resumed(record), key


def test_ctrl_c_stops_the_workers_and_leaves_the_rows_to_resume(tmp_path):
    sims = servers(0.01)
    sw = tmp_path / "sw"
    try:
        proc = start(["run", "--sweep-dir", str(sw), *SELECTION, *endpoint_args(sims), "--workers", "2",
                      "--no-aggregate"])
        workers = wait_for_workers(proc, sims, MID_SWEEP)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole foreground group
        assert proc.wait(timeout=120) == 130
    finally:
        for s in sims:
            s.stop()
    assert not any(alive(w) for w in workers)
    assert "running" in {s for s, _ in attempts(sw).values()}
    assert max(n for _, n in attempts(sw).values()) == 1, "an interrupted job is not a failed attempt"
