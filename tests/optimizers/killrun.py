"""The harness of the optimize-phase kill -9 tests (test_resume.py, test_resume_team.py, hivemind/): run a job
uninterrupted against one endpoint, then the same job against a fresh endpoint, killed with -9 once that endpoint
has answered `kill_after` requests (inside the optimize phase, after some `kind` calls were recorded) and re-run
to the end. Each test then asserts what its methods promise about the two runs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.engine.jobutil import stored_sim_keys

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class KillRun:
    reference: Path  # the uninterrupted job's directory
    out: Path  # the killed and re-run job's directory
    log: list[dict[str, Any]]  # every request its endpoint answered, in order
    n_before: int  # how many of them before the kill
    recorded_before_kill: frozenset[str]  # the request keys the card held at the kill

    def resent(self) -> set[str]:
        """Requests recorded before the kill and sent again by the re-run (must be none)."""
        return {e["key"] for e in self.log[self.n_before:]} & self.recorded_before_kill

    def answered_twice(self) -> list[str]:
        return [k for k, n in Counter(e["key"] for e in self.log).items() if n > 1]


def kill_and_rerun(tmp_path: Path, cmd: Callable[[Path, str], list[str]], start: Callable[[], Any],
                   kill_after: int, kind: str) -> KillRun:
    reference = start()
    try:
        done = subprocess.run(cmd(tmp_path / "ref", reference.base_url), cwd=ROOT, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
    finally:
        reference.stop()

    server = start()
    try:
        out = tmp_path / "killed"
        proc = subprocess.Popen(cmd(out, server.base_url), cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(server.log) < kill_after and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert proc.poll() is None, "the job finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert not (out / "optimization.json").exists(), "killed after the optimize phase"
        recorded = frozenset(stored_sim_keys(out / "card.sqlite"))
        n_before = len(server.log)
        of_kind = {e["key"] for e in server.log if e["kind"] == kind}
        assert recorded & of_kind, f"kill after some {kind} calls were recorded (their replay is tested)"

        again = subprocess.run(cmd(out, server.base_url), cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        log = list(server.log)
    finally:
        server.stop()
    return KillRun(tmp_path / "ref", out, log, n_before, recorded)
