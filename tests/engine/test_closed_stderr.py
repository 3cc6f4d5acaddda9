"""A job whose stderr goes away (`engine job ... 2>&1 | head -1`, a dropped ssh session) does the same work and
records the same decisions as one whose stderr is read: a progress line that cannot be written is dropped, never
raised into the job (it once killed the job, or, inside a method, became the method's program_failure)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

from engine.log import get_logger
from tests.engine.sweep.test_workers import job_record

ROOT = Path(__file__).resolve().parents[2]
JOB = ["-m", "engine", "job", "--cell", "task=bfcl,topology=single", "--method", "gepa", "--seed", "0"]


def test_a_log_line_to_a_closed_stderr_raises_nothing(monkeypatch):
    read, write = os.pipe()
    os.close(read)
    broken = io.TextIOWrapper(os.fdopen(write, "wb", buffering=0), write_through=True)
    with monkeypatch.context() as m:
        m.setattr(sys, "stderr", broken)
        get_logger("t").info("progress: charged=10/600", kind="progress")  # EPIPE
        closed = io.StringIO()
        closed.close()
        m.setattr(sys, "stderr", closed)
        get_logger("t").warning("still nothing raised")  # ValueError: I/O on a closed file
    with contextlib.suppress(OSError):
        broken.close()


def test_a_job_whose_stderr_is_closed_records_what_a_watched_job_records(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    watched = subprocess.run([sys.executable, *JOB, "--out", str(tmp_path / "watched")], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
    assert watched.returncode == 0, watched.stderr[-2000:]
    proc = subprocess.Popen([sys.executable, *JOB, "--out", str(tmp_path / "unwatched")], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    proc.stderr.readline()  # the first line (the simulated endpoint's label), then the reader goes away
    proc.stderr.close()
    assert proc.wait(timeout=300) == 0
    assert job_record(tmp_path / "unwatched") == job_record(tmp_path / "watched")
