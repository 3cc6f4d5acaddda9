"""`--max-outage` on `job` and `run`: documented in --help, validated up front (one line, exit 2, nothing
written)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[3]


def engine(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("command", ["job", "run"])
def test_help_documents_max_outage(command: str):
    proc = engine(command, "--help")
    assert proc.returncode == 0 and "--max-outage" in proc.stdout


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon"])
def test_bad_max_outage_is_refused_before_anything_is_written(tmp_path: Path, value: str):
    out = tmp_path / "job"
    proc = engine("job", "--cell", "task=bfcl,topology=single", "--method", "identity", "--seed", "0",
                  "--out", str(out), "--max-outage", value)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--max-outage" in lines[0], proc.stderr
    assert not out.exists()
