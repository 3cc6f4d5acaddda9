"""A benchmark whose protocol scorer cannot run here (API-Bank without its checkout) is refused before anything is
written: one line, exit 2, not one infrastructure failure per rollout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("command", ["job", "run"])
def test_apibank_without_checkout_is_refused_up_front(tmp_path, command):
    env = {**os.environ, "APIBANK_ROOT": str(tmp_path / "no-such-checkout")}
    out = tmp_path / ("job" if command == "job" else "pred.jsonl")
    extra = ["--method", "identity"] if command == "job" else ["--split", "test", "--limit", "2"]
    proc = subprocess.run([sys.executable, "-m", "engine", command, "--cell", "task=apibank,topology=single",
                           "--seed", "0", "--out", str(out), *extra], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "api-bank" in lines[0].lower() and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written
