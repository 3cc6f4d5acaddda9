"""`serve-sim` command line: help, bad flags, and a real serving subprocess stopped by SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from engine.sim.cli import BANNER, main
from tests.engine.sim.fake_benchmark import answering_messages

ROOT = Path(__file__).resolve().parents[3]


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--fault" in out and "--delay-ms" in out and "--reflection-model" in out


@pytest.mark.parametrize("argv", [["--bogus"], ["--port", "x"], ["--fault", "explode=0.1"],
                                  ["--fault", "http_500=2"], ["--fault", "http_500=0.7", "--fault", "reset=0.7"],
                                  ["--port", "70000"], ["--delay-ms", "-1"]])
def test_bad_flags_exit_two_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("serve-sim: error:") and err.count("\n") == 1


def test_unknown_task_exits_two(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from core.errors import UsageError
    from engine.sim import build

    def fail(tasks, data_dir, reflection_model):
        raise UsageError("unknown task 'nope'")

    monkeypatch.setattr(build, "build_policy", fail)
    assert main(["--tasks", "nope", "--port", "0"]) == 2
    assert "unknown task" in capsys.readouterr().err


@pytest.mark.slow
def test_serves_until_sigterm(tmp_path: Path) -> None:
    log_path = tmp_path / "log.jsonl"
    code = ("import sys; import engine.sim.build as b; import tests.engine.sim.fake_benchmark as f; "
            "b.build_policy = f.build_fake_policy; from engine.sim.cli import main; "
            "raise SystemExit(main(sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code, "--port", "0", "--tasks", "arith", "--log", str(log_path)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        body = {"model": "qwen", "seed": 2, "messages": answering_messages("r5")}
        with httpx.Client(base_url=base_url, timeout=30) as client:
            response = client.post("/chat/completions", json=body)
        assert response.status_code == 200 and response.json()["simulated"] is True
        assert response.headers["X-Simulated-Endpoint"] == "true"
        entries = [json.loads(line) for line in log_path.read_text().splitlines()]
        assert [e["row_id"] for e in entries] == ["r5"]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
    assert BANNER in err
