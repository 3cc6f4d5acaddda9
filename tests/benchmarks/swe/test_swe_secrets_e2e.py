"""A real SWE job (`python -m engine job --cell task=swe,topology=single --swe-repos DIR`, a child process with
secrets in its environment) against a simulated endpoint whose "model" answers every task with a `shell_exec` that
prints the environment, every readable /proc/<pid>/environ and cmdline, and credential-shaped strings. Afterwards
no secret value and no credential-shaped string is anywhere in the run directory (every file, the SQLite bytes
included) or in any request the endpoint received; the scrubber's mark shows the tool output was recorded.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Sequence

import pytest

from benchmarks.sandbox import probe
from benchmarks.swe.benchmark import SWEBenchmark
from core.models import Row
from core.simulation import SimReply
from engine.sim.policy import Policy
from engine.sim.server import SimServer
from tests.benchmarks.sandbox.hostile import ROOT
from tests.benchmarks.swe.repos import make_mirror

pytestmark = pytest.mark.skipif(not probe().available, reason="no bubblewrap jail on this machine")
SHAPED = ("sk-" + "Z" * 40, "Bearer " + "q" * 30, "hf_" + "W" * 30)
# the credential-shaped strings are built by the shell, so only the tool's OUTPUT holds them (not the command)
DUMP = ("z() { printf \"$1%.0s\" $(seq $2); }; echo sk-$(z Z 40) Bearer $(z q 30) hf_$(z W 30); env; "
        "cat /etc/shadow; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do echo \"== $f\"; "
        "tr '\\0' ' ' < $f; echo; done")


class DumpingSWE(SWEBenchmark):
    """The simulated model's answer to every SWE task: one shell_exec that prints everything it can find."""

    def __init__(self, rows: Sequence[Row]) -> None:
        super().__init__()
        self.rows = {row.id: row for row in rows}

    def load_rows(self, ids: Sequence[str], data_dir: Any = None) -> list[Row]:
        return [self.rows[i] for i in ids]

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        return SimReply(content=None, tool_calls=({"name": "shell_exec", "arguments": {"command": DUMP}},))


class RecordingPolicy(Policy):
    """The simulated endpoint's policy, keeping every request body it was asked to answer."""

    bodies: list[str]

    def decide(self, body: Any, match: Any = False) -> Any:
        self.bodies.append(json.dumps(body))
        return super().decide(body, match)


def write_rows(data_dir: Path, repo: str, base: str) -> list[Row]:
    splits = json.loads((ROOT / "benchmarks" / "swe" / "swe_splits.json").read_text())
    with (data_dir / "test.jsonl").open("w") as fh:
        for iid in dict.fromkeys([*splits["train"], *splits["validation"], *splits["test"]]):
            fh.write(json.dumps({
                "instance_id": iid, "repo": repo, "base_commit": base, "problem_statement": f"Fix {iid}.",
                "hints_text": "", "patch": "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-a\n+b\n",
                "test_patch": "", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]", "version": "1",
                "environment_setup_commit": base, "created_at": "2020-01-01"}) + "\n")
    bench = SWEBenchmark()
    return bench.load_rows([*splits["validation"], *splits["test"]], data_dir)


def all_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


@pytest.mark.slow
def test_a_tool_that_prints_every_environment_leaks_no_secret(tmp_path: Path):
    repos, base = make_mirror(tmp_path / "mirror")
    data_dir = tmp_path / "swe"
    data_dir.mkdir()
    rows = write_rows(data_dir, "acme/calc", base)
    secrets = {"OPENAI_API_KEY": f"sk-live-{uuid.uuid4().hex}", "HF_TOKEN": f"hf_{uuid.uuid4().hex}",
               "MPB_E2E_SECRET": f"plain-{uuid.uuid4().hex}"}
    policy = RecordingPolicy({"swe": (DumpingSWE(rows), rows)}, model_ids=("test-model",))
    policy.bodies = []
    server = SimServer(policy)
    server.start()
    out = tmp_path / "job"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "engine", "job", "--cell", "task=swe,topology=single", "--method", "identity",
             "--seed", "0", "--out", str(out), "--data-dir", str(data_dir), "--swe-repos", str(repos),
             "--task-endpoint", server.base_url, "--model-id", "test-model", "--allow-any-cell", "--quiet"],
            cwd=tmp_path, env={**os.environ, **secrets, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
            timeout=280)
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    received = "\n".join(policy.bodies).encode()
    assert b"== /proc/1/environ" in received, "the dump's output never reached the endpoint: it would prove nothing"
    blob = all_bytes(out)
    for where, data in (("the run directory", blob), ("the requests the endpoint received", received)):
        for name, value in secrets.items():
            assert value.encode() not in data, f"{name} leaked into {where}"
        for shaped in SHAPED:
            assert shaped.encode() not in data, f"{shaped[:10]}... leaked into {where}"
    assert b"[redacted]" in blob and b"== /proc/1/environ" in blob  # the dump ran and was recorded, scrubbed


@pytest.mark.slow
def test_without_a_jail_swe_with_tools_is_refused_unless_unsafe(tmp_path: Path):
    repos, base = make_mirror(tmp_path / "mirror")
    data_dir = tmp_path / "swe"
    data_dir.mkdir()
    write_rows(data_dir, "acme/calc", base)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPB_BWRAP": "/nonexistent/bwrap"}  # no jail, for real
    base_cmd = [sys.executable, "-m", "engine", "job", "--cell", "task=swe,topology=single", "--method",
                "identity", "--seed", "0", "--data-dir", str(data_dir), "--allow-any-cell", "--phase", "optimize"]

    def job(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base_cmd, "--out", str(out), *extra], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=280)

    refused = job(tmp_path / "refused", "--swe-repos", str(repos))
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "cannot be jailed" in refused.stderr and "--unsafe-sandbox" in refused.stderr
    assert not (tmp_path / "refused").exists() or not any((tmp_path / "refused").iterdir())
    no_tools = job(tmp_path / "no-tools")  # without checkouts no command runs: no jail needed
    assert no_tools.returncode == 0, no_tools.stderr[-2000:]
    unsafe = job(tmp_path / "unsafe", "--swe-repos", str(repos), "--unsafe-sandbox")
    assert unsafe.returncode == 0, unsafe.stderr[-2000:]
    assert "WITHOUT a jail" in unsafe.stderr
    identity = json.loads((tmp_path / "unsafe" / "job.json").read_text())
    assert "unsafe_sandbox" in json.dumps(identity)
