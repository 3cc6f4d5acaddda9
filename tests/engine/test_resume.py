"""Kill -9 during validation and during test, re-run: same result.json and score rows as an uninterrupted run,
and no request re-sent for a rollout recorded before the kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import start_sim
from tests.engine.jobutil import comparable, stored_sim_keys
from tests.fakebench import FakeBench

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]


def job_cmd(out: Path, url: str) -> list[str]:
    return [sys.executable, "-m", "tests.engine.run_fake_job", str(out), url, "identity", "2"]


def bench() -> FakeBench:
    return FakeBench(n_train=12, n_validation=20, n_test=30)


def scores(out: Path) -> dict:
    test = json.loads((out / "test.json").read_text())
    return {k: test[k] for k in ("example_ids", "baseline_scores", "deployed_scores", "baseline_status")}


@pytest.mark.parametrize("kill_after,phase", [(8, "validation"), (29, "test")])
def test_kill9_then_rerun_equals_uninterrupted(tmp_path, kill_after, phase):
    reference = start_sim(bench(), delay_s=0.03)
    try:
        done = subprocess.run(job_cmd(tmp_path / "ref", reference.base_url), cwd=ROOT, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    finally:
        reference.stop()

    server = start_sim(bench(), delay_s=0.03)
    try:
        out = tmp_path / "killed"
        proc = subprocess.Popen(job_cmd(out, server.base_url), cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while len(server.log) < kill_after and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, "the job finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)  # reaps it and closes both pipes
        assert not (out / "result.json").exists()
        if phase == "test":
            assert (out / "selection.json").exists()
        else:
            assert not (out / "selection.json").exists()
        recorded_before_kill = stored_sim_keys(out / "card.sqlite")
        n_before = len(server.log)
        assert recorded_before_kill, "some rollouts were recorded before the kill"

        again = subprocess.run(job_cmd(out, server.base_url), cwd=ROOT, capture_output=True, text=True,
                               timeout=120)
        assert again.returncode == 0, again.stderr
        log = server.log
    finally:
        server.stop()

    assert comparable(json.loads((out / "result.json").read_text())) == \
        comparable(json.loads((tmp_path / "ref" / "result.json").read_text()))
    assert scores(out) == scores(tmp_path / "ref")
    resent = {e["key"] for e in log[n_before:]} & recorded_before_kill
    assert resent == set(), "a rollout recorded before the kill was requested again"
    # only requests in flight at the kill may appear twice
    twice = [k for k, n in Counter(e["key"] for e in log).items() if n > 1]
    assert len(twice) <= 2  # concurrency 2
