"""A framework's own failure lines under faults (issue W: AutoGen wrote 774 plain `Error processing publish
message` lines to stderr, even with --quiet), end to end through `python -m engine job` on the AutoGen runtime
against a simulated endpoint failing 20% of requests: --quiet shows none of them, the console the first
engine.log.FRAMEWORK_LINES and one line saying the rest are not shown; the job completes either way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.log import FRAMEWORK_LINES
from engine.sim.build import build_policy
from engine.sim.faults import FaultPlan
from engine.sim.server import SimServer

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]
FAULTS = FaultPlan(rates={"http_500": 0.1, "reset": 0.05, "malformed_json": 0.05}, seed=3)
PUBLISH = "Error processing publish message"


@pytest.mark.parametrize("quiet", [True, False])
def test_autogen_failure_lines_under_faults(tmp_path: Path, quiet: bool):
    server = SimServer(build_policy(["bfcl"]), faults=FAULTS).start()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "engine", "job", "--cell", "task=bfcl,topology=centralized,framework=autogen",
             "--method", "identity", "--seed", "0", "--out", str(tmp_path / "job"), "--task-endpoint",
             server.base_url, "--model-id", "simulated-policy", "--allow-any-cell", *(["--quiet"] if quiet else [])],
            cwd=ROOT, capture_output=True, text=True, timeout=240)
        faults = sum(server.fault_counts().values())
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    assert faults > 50  # the framework did see failures
    lines = done.stderr.splitlines()
    notices = [line for line in lines if "further log records of this framework are not shown" in line]
    assert sum(PUBLISH in line for line in lines) == (0 if quiet else FRAMEWORK_LINES)
    assert len(notices) == (0 if quiet else 1)
    assert not any(line.startswith("Traceback") for line in lines)
