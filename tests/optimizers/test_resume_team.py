"""MAPRO and MASPO: kill -9 at a seeded random point of optimization on a 4-agent BFCL team, re-run: the same
incumbent, learning curve and selection as an uninterrupted run, and no task, judge, probe or reflection request
recorded before the kill is sent again (only requests in flight at the kill may repeat)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from engine.sim.build import build_policy
from engine.sim.server import SimServer
from tests.engine.jobutil import stored_sim_keys
from tests.optimizers.test_resume import artifacts

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]
CONCURRENCY = 4


def job_cmd(out: Path, url: str, method: str) -> list[str]:
    return [sys.executable, "-m", "tests.optimizers.run_team_job", str(out), url, method, str(CONCURRENCY)]


def start() -> SimServer:
    server = SimServer(build_policy(["bfcl"]), delay_s=0.001)
    server.start()
    return server


def kinds_sent(log: list[dict]) -> set[str]:
    return {e["kind"] for e in log}


# kill windows (request counts) inside the optimize phase, after the first judge call of each method
@pytest.mark.parametrize("method,window,draw_seed", [("mapro", (700, 1400), 21), ("maspo", (120, 1600), 22)])
def test_kill9_during_team_optimization_then_rerun_equals_uninterrupted(tmp_path, method, window, draw_seed):
    kill_after = random.Random(draw_seed).randint(*window)
    reference = start()
    try:
        done = subprocess.run(job_cmd(tmp_path / "ref", reference.base_url, method), cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    finally:
        reference.stop()

    server = start()
    try:
        out = tmp_path / "killed"
        proc = subprocess.Popen(job_cmd(out, server.base_url, method), cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(server.log) < kill_after and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert proc.poll() is None, "the job finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert not (out / "optimization.json").exists(), "killed after the optimize phase"
        recorded_before_kill = stored_sim_keys(out / "card.sqlite")
        n_before = len(server.log)
        judged = {e["key"] for e in server.log if e["kind"] == "judge"}
        assert recorded_before_kill & judged, "kill after some judge calls were recorded (their replay is tested)"

        again = subprocess.run(job_cmd(out, server.base_url, method), cwd=ROOT, capture_output=True, text=True,
                               timeout=300)
        assert again.returncode == 0, again.stderr
        log = server.log
    finally:
        server.stop()

    assert artifacts(out) == artifacts(tmp_path / "ref")
    resent = {e["key"] for e in log[n_before:]} & recorded_before_kill
    assert resent == set(), "a request recorded before the kill was sent again"
    twice = [k for k, n in Counter(e["key"] for e in log).items() if n > 1]
    assert len(twice) <= 2 * CONCURRENCY  # in flight at the kill: task endpoint (rollouts, judge, probe) + reflection
    assert {"judge", "reflection"} <= kinds_sent(log)
    usage = json.loads((out / "optimization.json").read_text())["usage"]
    ref_usage = json.loads((tmp_path / "ref" / "optimization.json").read_text())["usage"]
    assert usage == ref_usage  # per-component usage identical for a resumed and an uninterrupted run
