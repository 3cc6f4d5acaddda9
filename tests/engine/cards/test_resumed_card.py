"""Interrupted runs: a job killed with SIGKILL during the test phase and re-run (two store generations, interrupted
nodes cancelled on resume, attempts re-run under new execution ids), and a job that fails with rollouts in flight
(they end cancelled, not running): both cards validate with no error and no warning."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from core.errors import ContractError
from engine.cards.export import export_card
from engine.cards.validate import validate_path
from tests.conftest import start_sim
from tests.engine.cards.cardutil import lines
from tests.engine.jobutil import run
from tests.fakebench import FakeBench
from tests.engine.test_resume import ROOT, bench, job_cmd


@pytest.mark.slow
def test_resumed_job_card_is_valid(tmp_path):
    server = start_sim(bench(), delay_s=0.03)
    try:
        out = tmp_path / "job"
        proc = subprocess.Popen(job_cmd(out, server.base_url), cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while len(server.log) < 29 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, "the job finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        again = subprocess.run(job_cmd(out, server.base_url), cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
    finally:
        server.stop()
    bundle = export_card(out, tmp_path / "card")
    assert validate_path(tmp_path / "card") == []
    generations = {e["task_execution_id"].rsplit("#g", 1)[-1].split("a")[0] for e in lines(bundle, "events")
                   if "#g" in e["task_execution_id"]}
    assert generations == {"0", "1"}
    assert any(m["mutation_type"] == "node.status_changed" and m["new_value"]["status"] == "cancelled"
               for m in lines(bundle, "mutations"))  # the interruption is in the record


class _CrashingBench(FakeBench):
    """Once armed, rendering test row q40 breaks an engine contract: the job fails loudly with rollouts in flight.
    (Any other exception in agent code is contained as an infrastructure failure of the attempt; engine errors
    such as ContractError still end the job.)"""

    armed = False

    def render_task(self, row):  # type: ignore[no-untyped-def]
        if self.armed and row.id == "q40":
            time.sleep(0.05)  # let the other rollouts of the batch start
            raise ContractError("bug in render_task")
        return super().render_task(row)


def test_failed_job_card_leaves_no_node_running(tmp_path):
    bench = _CrashingBench(n_train=12, n_validation=20, n_test=30)
    server = start_sim(bench, delay_s=0.02)
    bench.armed = True
    try:
        with pytest.raises(BaseException) as failure:
            run(tmp_path / "job", server.base_url, bench)
    finally:
        server.stop()
    assert "bug in render_task" in repr(failure.value) or "bug in render_task" in str(failure.value.__context__)
    bundle = export_card(tmp_path / "job", tmp_path / "card")
    nodes = lines(bundle, "nodes")
    assert next(n for n in nodes if n["parent_id"] is None)["status"] == "failed"
    assert not [n["node_id"] for n in nodes if n["status"] == "running"]
    cancelled = [m for m in lines(bundle, "mutations") if m["mutation_type"] == "node.status_changed"
                 and m["new_value"]["status"] == "cancelled"]
    assert cancelled and all("the job failed" in m["reason"] for m in cancelled)
    assert validate_path(tmp_path / "card") == []
