"""kill -9 of a whole sweep, five times at different moments (shared evaluations in flight among them), then a
last run to the end: every result equals the uninterrupted sweep's, and the endpoints never receive again a
request whose answer any job had recorded before a kill (counted from the endpoints' own request logs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engine.jobutil import stored_sim_keys
from tests.engine.sweep.sweeputil import (ROOT, SELECTION, duplicates, endpoint_args, model_requests, plan_keys,
                                          results, start_servers, sweep)

pytestmark = pytest.mark.slow  # end-to-end sweeps: left out of the fast loop (-m "not slow")

# requests the endpoints answered in all (the uninterrupted sweep sends about 2,500) when each kill lands: the
# first lands in the shared seed-bundle evaluations, the later ones among GEPA's searches and test evaluations
KILL_AFTER = (60, 450, 900, 1400, 1900)


def recorded_keys(sw: Path) -> set[str]:
    keys: set[str] = set()
    for card in (sw / "runs").rglob("card.sqlite"):
        keys |= stored_sim_keys(card)
    return keys


def kill_after(args: list[str], servers, answered: int) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "engine", "sweep", *args], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 200
    while time.monotonic() < deadline and proc.poll() is None:
        if sum(len(model_requests(s.log)) for s in servers) >= answered:
            break
        time.sleep(0.01)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # it finished first
        pass
    proc.wait()


def test_kill_9_at_five_moments_resends_nothing_recorded_and_ends_equal(tmp_path):
    servers = start_servers(2, delay_s=0.01)
    sw = tmp_path / "sw"
    args = ["run", "--sweep-dir", str(sw), *SELECTION, *endpoint_args(servers), "--limit", "4", "--max-jobs", "6",
            "--no-aggregate"]
    resent: list[str] = []
    try:
        kill_after(args, servers, KILL_AFTER[0])
        for answered in (*KILL_AFTER[1:], None):
            recorded = recorded_keys(sw)
            assert recorded, "nothing recorded before the kill: the run would prove nothing"
            marks = [len(s.log) for s in servers]
            if answered is None:  # the last run goes to the end
                done = sweep(*args)
                assert done.returncode == 0, done.stderr[-2000:]
            else:
                kill_after(args, servers, answered)
            after = [e for s, mark in zip(servers, marks) for e in model_requests(s.log[mark:])]
            resent += [e["key"] for e in after if e["key"] in recorded]
        clean = start_servers(1)
        try:
            alone = sweep("run", "--sweep-dir", str(tmp_path / "clean"), *SELECTION, *endpoint_args(clean),
                          "--no-aggregate")
            assert alone.returncode == 0, alone.stderr[-2000:]
            assert not duplicates(clean[0].log)  # uninterrupted, no request is sent twice: any re-send is waste
        finally:
            clean[0].stop()
    finally:
        for s in servers:
            s.stop()
    assert resent == []
    keys = [j["key"] for j in plan_keys(*SELECTION) if j["runnable"]]
    assert results(sw / "runs", keys) == results(tmp_path / "clean" / "runs", keys)
