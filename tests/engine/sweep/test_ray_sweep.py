"""The Ray executor runs the same 12-job sweep on a private local Ray instance (2 CPUs, no dashboard) with results
identical to the jobs run one by one; it never connects to a cluster it was not named."""

from __future__ import annotations

import sqlite3

import pytest

from tests.engine.sweep.sweeputil import SELECTION, endpoint_args, plan_keys, results, run_one_by_one, start_servers, sweep

pytestmark = pytest.mark.slow  # end-to-end sweeps: left out of the fast loop (-m "not slow")

pytest.importorskip("ray")


def test_ray_executor_runs_the_12_job_sweep_with_identical_results(tmp_path):
    servers = start_servers(2)
    alone_server = start_servers(1)[0]
    try:
        proc = sweep("run", "--sweep-dir", str(tmp_path / "sw"), *SELECTION, *endpoint_args(servers), "--limit", "8",
                     "--executor", "ray", "--address", "local", "--ray-local-cpus", "2", "--max-jobs", "4",
                     "--no-aggregate", timeout=280)
        jobs = plan_keys(*SELECTION)
        run_one_by_one(jobs, tmp_path / "alone", alone_server)
    finally:
        for s in servers + [alone_server]:
            s.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    db = sqlite3.connect(str(tmp_path / "sw" / "sweep.sqlite"))
    assert [r[0] for r in db.execute("SELECT DISTINCT status FROM jobs")] == ["finished"]
    keys = [j["key"] for j in jobs]
    assert results(tmp_path / "sw" / "runs", keys) == results(tmp_path / "alone", keys)


@pytest.mark.parametrize("address", [None, "auto"])
def test_ray_needs_an_explicit_address(tmp_path, address):
    args = ["run", "--sweep-dir", str(tmp_path / "sw"), *SELECTION, "--simulated", "--executor", "ray"]
    proc = sweep(*args, *(["--address", address] if address else []))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "address" in proc.stderr
    assert not (tmp_path / "sw" / "runs").exists()
