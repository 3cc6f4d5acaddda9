"""The jail works for an interpreter in a virtualenv under /tmp: its read-only binds are mounted after the jail's
own private /tmp, so they are not hidden by it (a venv in /tmp is how many CI systems and users run)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from benchmarks.sandbox.isolation import check

ROOT = Path(__file__).resolve().parents[3]


def test_a_virtualenv_under_tmp_runs_jailed(tmp_path):
    if not check().available:
        pytest.skip("no jail on this machine: `python -m engine sandbox check` says why")
    with tempfile.TemporaryDirectory(dir="/tmp") as where:
        venv = Path(where) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                       check=True, timeout=120)
        program = tmp_path / "prog.py"
        program.write_text("import os, sys\nprint(os.getuid(), sys.prefix)\n")
        proc = subprocess.run([str(venv / "bin" / "python"), "-m", "engine", "sandbox", "run", str(program)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout.strip().splitlines()[-1])
    assert outcome["isolation"]["kind"] == "bwrap" and outcome["uid"] == 65534, outcome
    assert outcome["exit_code"] == 0 and outcome["stdout_head"].split()[0] == "65534", outcome
