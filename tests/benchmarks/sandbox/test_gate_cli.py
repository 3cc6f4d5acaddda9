"""`engine sandbox check|run`, and the rule for code benchmarks: no jail means a one-line refusal (exit 2,
nothing written) unless --unsafe-sandbox, which runs, says so on stderr and marks job.json non-conformant.
"No jail" is made real by pointing MPB_BWRAP at a missing binary."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.registry import get_benchmark
from benchmarks.sandbox import isolation as isolation_module
from engine.job.sandbox_gate import gate_sandbox, runs_model_code
from tests.benchmarks.sandbox.hostile import ROOT
from tests.test_readme import commands as readme_commands

NO_JAIL = {"MPB_BWRAP": "/nonexistent/bwrap"}
HONEST = "a, b = map(int, input().split())\nprint(a + b)\n"


def engine(args: list[str], cwd: Path, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=280)


def apps_data(tmp_path: Path, program: str = HONEST) -> Path:
    data = tmp_path / "apps"
    data.mkdir()
    splits = json.loads((ROOT / "benchmarks" / "apps" / "apps_splits.json").read_text())
    with (data / "test.jsonl").open("w") as fh:
        for pid in [*splits["train"], *splits["validation"], *splits["test"]]:
            fh.write(json.dumps({"problem_id": int(pid), "question": "Print a + b.", "difficulty": "interview",
                                 "solutions": json.dumps([program]), "url": "", "starter_code": "",
                                 "input_output": json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]})}) + "\n")
    return data


@pytest.mark.slow
def test_check_reports_the_jail(tmp_path: Path):
    done = engine(["sandbox", "check"], tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("jail: available"), done.stdout + done.stderr
    assert "uid 65534" in done.stdout
    assert "swe repository tools: jailed (jailed as uid 65534: /testbed" in done.stdout  # tried end to end
    missing = engine(["sandbox", "check"], tmp_path, NO_JAIL)
    assert missing.returncode == 1 and "NOT available" in missing.stdout and "MPB_BWRAP" in missing.stdout
    assert "SWE's repository tools (--swe-repos) refuse to run" in missing.stdout


@pytest.mark.slow
def test_readme_sandbox_commands_run(tmp_path: Path):
    commands = [c for c in readme_commands() if c.startswith("python -m engine sandbox")]  # README.md, docs/*.md
    assert {c.split()[4] for c in commands} == {"check", "run"}
    (tmp_path / "prog.py").write_text("import os, sys\nprint(os.getuid(), sys.stdin.read().strip()[::-1])\n")
    (tmp_path / "in.txt").write_text("olleh\n")
    for command in commands:
        done = engine(shlex.split(command)[3:], tmp_path)
        assert done.returncode == 0, done.stderr
        if " run " in command:
            line = json.loads(done.stdout)
            assert line["stdout_head"] == "65534 hello\n" and line["uid"] == 65534 and line["exit_code"] == 0
            assert line["isolation"]["kind"] == "bwrap" and line["limits"] == "apps"
            assert not line["timed_out"] and not line["memory_limit_hit"] and not line["output_limit_hit"]


@pytest.mark.slow
def test_run_reports_limits_and_scrubs_its_heads(tmp_path: Path):
    (tmp_path / "loop.py").write_text("print('sk-' + 'A' * 30, flush=True)\nwhile True:\n    pass\n")
    done = engine(["sandbox", "run", "loop.py", "--limits", "toolhop"], tmp_path)
    line = json.loads(done.stdout)
    assert line["timed_out"] and line["signal"] in ("SIGXCPU", "SIGKILL")
    assert "A" * 30 not in done.stdout and "[redacted]" in line["stdout_head"]


@pytest.mark.slow
@pytest.mark.parametrize("args,message", [
    (["sandbox", "run", "missing.py"], "cannot read program"),
    (["sandbox", "run", "prog.py", "--limits", "nope"], "invalid choice"),
    (["sandbox"], "required"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args, message):
    (tmp_path / "prog.py").write_text("print(1)\n")
    done = engine(args, tmp_path)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_sandbox_run_without_jail_is_refused_or_explicitly_unsafe(tmp_path: Path):
    marker = tmp_path / "ran"
    (tmp_path / "prog.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    refused = engine(["sandbox", "run", "prog.py"], tmp_path, NO_JAIL)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "cannot be jailed" in refused.stderr and "--unsafe-sandbox" in refused.stderr and not marker.exists()
    unsafe = engine(["sandbox", "run", "prog.py", "--unsafe-sandbox"], tmp_path, NO_JAIL)
    assert unsafe.returncode == 0 and "WITHOUT a jail" in unsafe.stderr
    assert json.loads(unsafe.stdout)["isolation"]["kind"] == "unsafe"


@pytest.mark.slow
def test_code_job_without_jail_is_refused_before_anything_is_written(tmp_path: Path):
    data = apps_data(tmp_path)
    for command in (["job", "--method", "identity", "--out", "job"], ["run", "--split", "test", "--limit", "2",
                                                                     "--out", "pred.jsonl"]):
        done = engine([*command, "--cell", "task=apps,topology=single", "--data-dir", str(data), "--quiet"],
                      tmp_path, NO_JAIL)
        assert done.returncode == 2, done.stderr
        assert re.fullmatch(r"error: model-written code cannot be jailed: .*--unsafe-sandbox.*\n", done.stderr)
    assert not (tmp_path / "job" / "job.json").exists() and not (tmp_path / "pred.jsonl").exists()


@pytest.mark.slow
def test_unsafe_job_runs_and_is_marked_nonconformant(tmp_path: Path):
    data = apps_data(tmp_path)
    done = engine(["job", "--cell", "task=apps,topology=single", "--method", "identity", "--out", "job",
                   "--data-dir", str(data), "--quiet", "--unsafe-sandbox"], tmp_path, NO_JAIL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "WITHOUT a jail" in done.stderr and "non-conformant" in done.stderr
    identity = json.loads((tmp_path / "job" / "job.json").read_text())
    identity = identity.get("payload", identity)
    assert "unsafe_sandbox" in identity["nonconformance_reasons"] and identity["protocol_conformant"] is False
    assert json.loads(done.stdout.strip().splitlines()[-1])["status"] == "completed"


def test_only_code_benchmarks_need_the_jail(monkeypatch: pytest.MonkeyPatch):
    assert [t for t in ("lcb", "apps", "toolhop", "gpqa", "math", "bfcl") if runs_model_code(get_benchmark(t))] == \
        ["lcb", "apps", "toolhop"]
    monkeypatch.setenv("MPB_BWRAP", "/nonexistent/bwrap")
    monkeypatch.setattr(isolation_module, "_cached", None)
    try:
        gate_sandbox(get_benchmark("gpqa"), unsafe=False)  # no jail, no code: goes on
        with pytest.raises(isolation_module.SandboxUnavailable):
            gate_sandbox(get_benchmark("lcb"), unsafe=False)
    finally:
        monkeypatch.setattr(isolation_module, "_cached", None)
