"""Kill -9 at a seeded random point of optimization, re-run: the same incumbent, learning curve and selection as
an uninterrupted run, and no task or reflection request recorded before the kill is sent again."""

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

from tests.conftest import start_sim
from tests.engine.jobutil import comparable, stored_sim_keys
from tests.optimizers.optjob import bench

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]
CONCURRENCY = 4


def job_cmd(out: Path, url: str, method: str) -> list[str]:
    return [sys.executable, "-m", "tests.optimizers.run_opt_job", str(out), url, method, str(CONCURRENCY)]


def artifacts(out: Path) -> dict:
    return {"optimization": json.loads((out / "optimization.json").read_text()),
            "curve": (out / "optimization" / "learning_curve.jsonl").read_text(),
            "optimizer_result": json.loads((out / "optimization" / "optimizer_result.json").read_text()),
            "selection": json.loads((out / "selection.json").read_text()),
            "result": comparable(json.loads((out / "result.json").read_text()))}


# kill windows: request counts that fall inside the optimize phase of each method on this bench
@pytest.mark.parametrize("method,window,draw_seed", [("gepa", (15, 400), 11), ("mipro", (8, 70), 12)])
def test_kill9_during_optimization_then_rerun_equals_uninterrupted(tmp_path, method, window, draw_seed):
    kill_after = random.Random(draw_seed).randint(*window)
    reference = start_sim(bench(), delay_s=0.002)
    try:
        done = subprocess.run(job_cmd(tmp_path / "ref", reference.base_url, method), cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    finally:
        reference.stop()

    server = start_sim(bench(), delay_s=0.002)
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
        reflected = {e["key"] for e in server.log if e["kind"] == "reflection"}
        assert recorded_before_kill & reflected, "kill after some reflection calls were recorded (replay is tested)"

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
    assert len(twice) <= CONCURRENCY  # only requests in flight at the kill
    reflections = [e for e in log if e["kind"] == "reflection"]
    assert reflections, "the run used the reflection model"
