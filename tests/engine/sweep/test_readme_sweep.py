"""The README's sweep commands run as written (sweep dir redirected into tmp)."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from tests.test_readme import ROOT, commands

pytestmark = pytest.mark.slow  # end-to-end sweeps: left out of the fast loop (-m "not slow")


def _run(cmd: str, tmp_path) -> subprocess.CompletedProcess[str]:
    argv = [a.replace("runs/", f"{tmp_path}/runs/") for a in shlex.split(cmd)[1:]]
    return subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=240)


def test_readme_sweep_commands_run(tmp_path):
    sweeps = [c for c in commands() if c.startswith("python -m engine sweep")]
    assert [c.split()[4] for c in sweeps] == ["plan", "run", "status"]
    plan = _run(sweeps[0], tmp_path)
    assert plan.returncode == 0 and "jobs:" in plan.stdout and "rough cost" in plan.stdout
    run = _run(sweeps[1], tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "finished=3" in run.stderr and "identity\tbfcl\tsingle" in run.stdout  # aggregate ran
    assert (tmp_path / "runs" / "sweep-demo" / "summary.json").exists()
    status = _run(sweeps[2], tmp_path)
    assert status.returncode == 0 and "finished=3" in status.stdout
    for seed in "012":
        assert (tmp_path / "runs" / "sweep-demo" / "runs" / "identity" / "bfcl" / "single" / "qwen" / seed /
                "result.json").exists()
