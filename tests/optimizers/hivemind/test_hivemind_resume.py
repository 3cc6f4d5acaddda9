"""HiveMind: kill -9 at a seeded random point of optimization on a 4-agent centralized BFCL team (the pattern of
tests/optimizers/test_resume_team.py), re-run: the same incumbent, learning curve and selection as an
uninterrupted run, the same reflection usage, and no task or reflection request recorded before the kill sent
again (only requests in flight at the kill may repeat)."""

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

from tests.engine.jobutil import stored_sim_keys
from tests.optimizers.test_resume import artifacts
from tests.optimizers.test_resume_team import CONCURRENCY, ROOT, start

pytestmark = pytest.mark.slow

CELL = "task=bfcl,topology=centralized,team_size=4"


def job_cmd(out: Path, url: str) -> list[str]:
    return [sys.executable, "-m", "tests.optimizers.run_team_job", str(out), url, "hivemind", str(CONCURRENCY), CELL]


def test_kill9_during_hivemind_optimization_then_rerun_equals_uninterrupted(tmp_path):
    kill_after = random.Random(31).randint(300, 1200)
    reference = start()
    try:
        done = subprocess.run(job_cmd(tmp_path / "ref", reference.base_url), cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    finally:
        reference.stop()

    server = start()
    try:
        out = tmp_path / "killed"
        proc = subprocess.Popen(job_cmd(out, server.base_url), cwd=ROOT, stdout=subprocess.DEVNULL,
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
        assert recorded_before_kill & reflected, "kill after some reflection calls were recorded"

        again = subprocess.run(job_cmd(out, server.base_url), cwd=ROOT, capture_output=True, text=True,
                               timeout=300)
        assert again.returncode == 0, again.stderr
        log = server.log
    finally:
        server.stop()

    assert artifacts(out) == artifacts(tmp_path / "ref")
    resent = {e["key"] for e in log[n_before:]} & recorded_before_kill
    assert resent == set(), "a request recorded before the kill was sent again"
    twice = [k for k, n in Counter(e["key"] for e in log).items() if n > 1]
    assert len(twice) <= 2 * CONCURRENCY
    usage = json.loads((out / "optimization.json").read_text())["usage"]
    ref_usage = json.loads((tmp_path / "ref" / "optimization.json").read_text())["usage"]
    assert usage == ref_usage
