"""A sweep survives a failing job and a kill -9: the failure is reported, the rest finish; finished jobs are left
untouched, interrupted ones resume from their stores, and the final results equal an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.engine.sweep.sweeputil import (
    ROOT,
    SELECTION,
    as_in_a_terminal,
    endpoint_args,
    plan_keys,
    results,
    run_one_by_one,
    start_servers,
    sweep,
)

pytestmark = pytest.mark.slow  # end-to-end sweeps: left out of the fast loop (-m "not slow")


def test_an_always_failing_job_is_reported_and_the_others_finish(tmp_path):
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"jobs": [
        {"method": "identity", "cell": "task=bfcl,topology=single", "seeds": [0, 1]},
        {"method": "identity", "cell": "task=bfcl,topology=independent", "seeds": [0],
         "data_dir": str(tmp_path / "empty-data")}]}))  # a directory without the dataset's files
    (tmp_path / "empty-data").mkdir()
    servers = start_servers(2)
    try:
        proc = sweep("run", "--sweep-dir", str(tmp_path / "sw"), "--grid-file", str(grid), "--job-retries", "2",
                     *endpoint_args(servers), "--no-aggregate")
    finally:
        for s in servers:
            s.stop()
    assert proc.returncode == 1, proc.stderr[-2000:]
    db = sqlite3.connect(str(tmp_path / "sw" / "sweep.sqlite"))
    rows = {k: (s, a, e) for k, s, a, e in db.execute("SELECT key, status, attempts, error FROM jobs")}
    assert rows["identity/bfcl/single/qwen/0"][:2] == ("finished", 1)
    assert rows["identity/bfcl/single/qwen/1"][:2] == ("finished", 1)
    status, attempts, error = rows["identity/bfcl/independent/qwen/0"]
    assert status == "failed" and attempts == 3 and "empty-data" in error
    assert "FAILED identity/bfcl/independent/qwen/0" in proc.stderr
    shown = sweep("status", "--sweep-dir", str(tmp_path / "sw"))
    assert "failed=1" in shown.stdout and "empty-data" in shown.stdout


def _finished(db_path):
    if not db_path.exists():
        return 0, 0
    db = sqlite3.connect(str(db_path), timeout=30)
    try:
        rows = dict(db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall())
    except sqlite3.OperationalError:
        return 0, 0
    finally:
        db.close()
    return rows.get("finished", 0), rows.get("running", 0)


def _rollouts(path):
    if not path.exists():
        return set()
    db = sqlite3.connect(str(path), timeout=30)
    try:
        return {r[0] for r in db.execute("SELECT rollout_key FROM rollouts")}
    except sqlite3.OperationalError:
        return set()
    finally:
        db.close()


def test_kill_9_midway_then_rerun_resumes_to_the_same_results(tmp_path):
    servers = start_servers(2, delay_s=0.01)
    sw = tmp_path / "sw"
    args = ["run", "--sweep-dir", str(sw), *SELECTION, *endpoint_args(servers), "--limit", "4", "--max-jobs", "6",
            "--no-aggregate"]
    try:
        proc = subprocess.Popen([sys.executable, "-m", "engine", "sweep", *args], cwd=ROOT, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline = time.monotonic() + 200
        while time.monotonic() < deadline:
            finished, running = _finished(sw / "sweep.sqlite")
            if finished >= 2 and running >= 1:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        db = sqlite3.connect(str(sw / "sweep.sqlite"))
        before = dict(db.execute("SELECT key, status FROM jobs").fetchall())
        db.close()
        done = [k for k, s in before.items() if s == "finished"]
        interrupted = [k for k, s in before.items() if s == "running"]
        assert done and interrupted and len(done) < 12
        stamps = {k: (sw / "runs" / k / "result.json").stat().st_mtime_ns for k in done}
        recorded = {k: _rollouts(sw / "runs" / k / "card.sqlite") for k in interrupted}
        assert any(recorded.values()), "no interrupted job had recorded anything: nothing to resume"
        again = sweep(*args)
        assert again.returncode == 0, again.stderr[-2000:]
        assert f"{len(done)} already finished" in again.stderr
        alone = run_one_by_one(plan_keys(*SELECTION), tmp_path / "alone", servers[0])
    finally:
        for s in servers:
            s.stop()
    assert {k: (sw / "runs" / k / "result.json").stat().st_mtime_ns for k in done} == stamps  # untouched
    db = sqlite3.connect(str(sw / "sweep.sqlite"))
    after = {k: (s, a) for k, s, a in db.execute("SELECT key, status, attempts FROM jobs")}
    assert all(s == "finished" for s, _ in after.values())
    assert all(after[k][1] == 2 for k in interrupted)  # resumed, not started over under a new identity
    for k, keys in recorded.items():
        if keys:  # its store replays what it recorded before the kill (same rollouts, resumed run node)
            card = sqlite3.connect(str(sw / "runs" / k / "card.sqlite"))
            reasons = [r[0] for r in card.execute("SELECT reason FROM mutations") if "resumed" in (r[0] or "")]
            assert reasons, f"{k} did not resume from its store"
            assert keys <= _rollouts(sw / "runs" / k / "card.sqlite")
    keys = list(alone)
    assert results(sw / "runs", keys) == results(tmp_path / "alone", keys)


def test_ctrl_c_stops_cleanly_and_the_rerun_finishes(tmp_path):
    servers = start_servers(2, delay_s=0.01)
    sw = tmp_path / "sw"
    args = ["run", "--sweep-dir", str(sw), *SELECTION, *endpoint_args(servers), "--limit", "4", "--max-jobs", "6",
            "--no-aggregate"]
    try:
        proc = subprocess.Popen([sys.executable, "-m", "engine", "sweep", *args], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                preexec_fn=as_in_a_terminal)
        deadline = time.monotonic() + 200
        while time.monotonic() < deadline and _finished(sw / "sweep.sqlite")[1] < 2:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and err.strip().splitlines()[-1] == "error: interrupted"
        assert "Traceback" not in err
        again = sweep(*args)
    finally:
        for s in servers:
            s.stop()
    assert again.returncode == 0, again.stderr[-2000:]
    db = sqlite3.connect(str(sw / "sweep.sqlite"))
    assert [r[0] for r in db.execute("SELECT DISTINCT status FROM jobs")] == ["finished"]
    for (key,) in db.execute("SELECT key FROM jobs"):  # no node was left `running` in any store
        card = sqlite3.connect(str(sw / "runs" / key / "card.sqlite"))
        assert card.execute("SELECT COUNT(*) FROM nodes WHERE status='running'").fetchone()[0] == 0
