"""A job killed with SIGKILL during the test phase and re-run: its card (two store generations, interrupted nodes
cancelled on resume, attempts re-run under new execution ids) validates with no error and no warning."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from engine.cards.export import export_card
from engine.cards.validate import validate_path
from tests.conftest import start_sim
from tests.engine.cards.cardutil import lines
from tests.engine.test_resume import ROOT, bench, job_cmd


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
