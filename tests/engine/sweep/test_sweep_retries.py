"""With 5xx faults on both endpoints, the only requests a sweep sends twice are same-seed retries of a failed one: an
answer is never asked for again (not even one a failed replica's siblings were waiting for)."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict

import pytest

from engine.sim.build import build_policy
from engine.sim.faults import FaultPlan
from engine.sim.server import SimServer
from tests.engine.sweep.sweeputil import endpoint_args, model_requests, sweep

pytestmark = pytest.mark.slow  # end-to-end sweeps: left out of the fast loop (-m "not slow")


def test_duplicates_are_only_same_seed_retries_of_failed_requests(tmp_path):
    policy = build_policy(["bfcl"], None)
    servers = [SimServer(policy, faults=FaultPlan(rates={"http_500": 0.1}, seed=i)).start() for i in range(2)]
    try:
        proc = sweep("run", "--sweep-dir", str(tmp_path / "sw"), "--runtime", "native", "--tasks", "bfcl", "--methods", "identity",
                     "--table", "3", "--topologies", "single,independent", *endpoint_args(servers), "--no-aggregate")
        # the jobs' requests: answered ones, and faulted ones (the policy never saw those); not the start-up probe
        entries = [e for s in servers for e in s.log if e.get("key") and (e.get("fault") or e in model_requests([e]))]
    finally:
        for s in servers:
            s.stop()
    assert proc.returncode == 0, proc.stderr[-2000:]
    by_key: dict[str, list[dict]] = defaultdict(list)
    for e in entries:
        by_key[e["key"]].append(e)
    repeated = {k: v for k, v in by_key.items() if len(v) > 1}
    assert repeated, "no fault was injected: the test would show nothing"
    for key, sent in repeated.items():
        assert sum(1 for e in sent if e["status"] == 200 and e["fault"] is None) <= 1, key  # answered at most once
        assert sum(1 for e in sent if e["fault"] is not None) >= len(sent) - 1, key  # every extra send was a retry
        assert len({e["seed"] for e in sent}) == 1, key  # with the same seed
    db = sqlite3.connect(str(tmp_path / "sw" / "sweep.sqlite"))
    assert [r[0] for r in db.execute("SELECT DISTINCT status FROM jobs")] == ["finished"]


def test_an_endpoint_lost_midway_is_ejected_and_the_sweep_finishes_on_the_other(tmp_path):
    import os
    import subprocess
    import sys
    import time

    from tests.engine.sweep.sweeputil import ROOT, SELECTION, plan_keys, results, run_one_by_one, start_servers

    servers = start_servers(2, delay_s=0.01)
    lost_url = servers[1].base_url
    sw = tmp_path / "sw"
    proc = subprocess.Popen([sys.executable, "-m", "engine", "sweep", "run", "--sweep-dir", str(sw), *SELECTION,
                             *endpoint_args(servers), "--limit", "8", "--no-aggregate"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 120
        while len(servers[1].log) < 300 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        servers[1].stop()  # the second GPU's server dies mid-sweep (it also serves no reflection)
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-2000:]
        alone = run_one_by_one(plan_keys(*SELECTION), tmp_path / "alone", servers[0])
    finally:
        servers[0].stop()
    events = [json.loads(line) for line in (sw / "pool-events.jsonl").read_text().splitlines()]
    assert any(e["event"] == "endpoint.ejected" and e["endpoint"] == lost_url for e in events)
    keys = list(alone)
    assert results(sw / "runs", keys) == results(tmp_path / "alone", keys)  # same answers: re-sent, same seeds
