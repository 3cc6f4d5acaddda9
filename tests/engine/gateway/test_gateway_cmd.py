"""`python -m engine gateway -- COMMAND`: an unchanged OpenAI-client program recorded into a card stream, with
seeds per (rollout, role, member, turn) and the protocol's decoding; a re-run replays every call by its logical
key (nothing sent again), and a request that changed is flagged `replay_mismatch`, not hidden."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core.seeds import call_seed, request_seed
from engine.sim.build import build_policy
from engine.sim.server import SimServer

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[3]
CHILD = [sys.executable, str(Path(__file__).with_name("child_program.py"))]


def gateway(url: str, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "engine", "gateway", "--task-endpoint", url, "--model-id", "sim-model",
           "--out", str(out), "--roles", "planner,solver", *extra]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def calls(out: Path) -> list[dict]:
    conn = sqlite3.connect(str(out / "card.sqlite"))
    try:
        return [json.loads(p) for (p,) in conn.execute(
            "SELECT payload FROM events WHERE event_type='model_call' ORDER BY rowid")]
    finally:
        conn.close()


@pytest.fixture
def server():
    sim = SimServer(build_policy(["bfcl"])).start()
    yield sim
    sim.stop()


def test_an_external_program_is_recorded_then_replayed(tmp_path, server):
    out = tmp_path / "rec"
    first = gateway(server.base_url, out, "--", *CHILD)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("True") == 3 and "3 model calls sent, 0 replayed" in first.stderr
    assert len(server.log) == 3
    recorded = calls(out)
    rollout_seed = request_seed(0, "gateway/external", "external", 0, "external", "rollout", 0)
    assert [(c["role"], c["turn"]) for c in recorded] == [("planner", 0), ("planner", 1), ("solver", 0)]
    for c in recorded:
        assert c["seed"] == call_seed(rollout_seed, c["role"], 0, c["turn"])
        assert c["params"]["temperature"] == 0.0  # evaluation decoding (greedy), not what the program asked
    assert recorded[0]["framework_params"] == {"temperature": "1.3"}
    again = gateway(server.base_url, out, "--", *CHILD)
    assert again.returncode == 0 and "0 model calls sent, 3 replayed" in again.stderr
    assert len(server.log) == 3  # nothing sent twice
    replays = calls(out)[3:]
    assert all(c["replayed_from"] and "replay_mismatch" not in c for c in replays)


def test_a_changed_request_replays_by_logical_key_and_is_flagged(tmp_path, server):
    out = tmp_path / "rec"
    assert gateway(server.base_url, out, "--", *CHILD).returncode == 0
    drift = gateway(server.base_url, out, "--", *CHILD, env={"CHILD_SUFFIX": " (changed)"})
    assert drift.returncode == 0 and len(server.log) == 3
    flagged = [c for c in calls(out)[3:] if "replay_mismatch" in c]
    assert [(c["role"], c["turn"]) for c in flagged] == [("planner", 0), ("planner", 1)]  # the solver's is unchanged
    for c in flagged:
        assert c["replay_mismatch"]["request_sha256"] != c["replay_mismatch"]["recorded_request_sha256"]


def test_exit_code_and_bad_input(tmp_path, server):
    failing = gateway(server.base_url, tmp_path / "f", "--", *CHILD, env={"CHILD_EXIT": "3"})
    assert failing.returncode == 3
    for extra, words in ((["--roles", "a b"], "--roles"), (["--members", "0"], "--members"),
                         (["--", "/nonexistent/program"], "cannot start")):
        bad = subprocess.run([sys.executable, "-m", "engine", "gateway", "--task-endpoint", server.base_url,
                              "--model-id", "sim-model", "--out", str(tmp_path / "b"), *extra], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and words in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert not (tmp_path / "b").exists()  # refused before anything is written
