"""The packages stay mypy-clean (CONVENTIONS: typed boundaries)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_is_clean():
    pytest.importorskip("mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy", "core", "engine", "topologies", "optimizers", "benchmarks",
                           "--ignore-missing-imports", "--no-error-summary"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:]
