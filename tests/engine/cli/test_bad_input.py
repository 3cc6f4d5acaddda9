"""Bad input: a clear one-line error, exit code 2, and nothing written."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[3]


def engine(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_args(out: Path, cell: str = "task=bfcl,topology=single", *extra: str) -> list[str]:
    return ["job", "--cell", cell, "--method", "identity", "--seed", "0", "--out", str(out), *extra]


CASES = [
    ("unknown task", job_args, ("task=nope,topology=single",), "unknown task"),
    ("unknown topology", job_args, ("task=bfcl,topology=ring",), "unknown topology"),
    ("malformed cell", job_args, ("task=bfcl,single",), "malformed --cell"),
    ("contradiction", job_args, ("task=bfcl,topology=single,team_size=4",), "team_size 1"),
    ("seed", lambda out: ["job", "--cell", "task=bfcl,topology=single", "--method", "identity", "--seed", "3",
                          "--out", str(out)], (), "--seed must be 0, 1 or 2"),
    ("budget zero", job_args, ("task=bfcl,topology=single", "--budget", "0"), "--budget must be in 1..600"),
    ("budget high", job_args, ("task=bfcl,topology=single", "--budget", "601"), "--budget must be in 1..600"),
    ("unknown method", lambda out: ["job", "--cell", "task=bfcl,topology=single", "--method", "nope", "--out",
                                    str(out)], (), "unknown method 'nope'; known methods:"),
    ("missing flag", lambda out: ["job", "--cell", "task=bfcl,topology=single", "--out", str(out)], (),
     "required"),
]


@pytest.mark.parametrize("name,build,extra,fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_job_input_exits_2_with_one_line_and_writes_nothing(tmp_path, name, build, extra, fragment):
    out = tmp_path / "out"
    proc = engine(*build(out, *extra))
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0], proc.stderr
    assert not out.exists()
    assert proc.stdout == ""


def test_unreachable_endpoint_at_start_up(tmp_path):
    out = tmp_path / "out"
    proc = engine(*job_args(out), "--task-endpoint", f"http://127.0.0.1:{free_port()}/v1", "--model-id", "m")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: task endpoint") and "unreachable" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_out_holding_another_job(tmp_path):
    out = tmp_path / "out"
    first = engine(*job_args(out), "--quiet")
    assert first.returncode == 0, first.stderr
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    second = engine("job", "--cell", "task=bfcl,topology=single", "--method", "identity", "--seed", "1",
                    "--out", str(out), "--quiet")
    assert second.returncode == 2
    assert "holds another job" in second.stderr and "optimizer_seed" in second.stderr
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_out_that_is_a_non_empty_foreign_directory(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    proc = engine(*job_args(out))
    assert proc.returncode == 2 and "not empty and holds no job.json" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_every_command_has_help():
    for cmd in ("job", "run", "serve-sim", "aggregate", "card"):
        proc = engine(cmd, "--help")
        assert proc.returncode == 0 and "usage" in proc.stdout.lower(), (cmd, proc.stderr)
    assert engine("--help").returncode == 0
    assert engine("frobnicate").returncode == 2
