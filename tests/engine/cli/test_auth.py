"""Authentication: keys come from the environment, go out as `Authorization: Bearer`, and are written nowhere."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.chat.auth import ApiKey, scrub
from engine.simulated import simulated_endpoint
from engine.sim.build import build_policy
from engine.sim.server import SimServer
from tests.engine.cli.hostile import ROOT, assert_refused, engine, job, snapshot


@pytest.fixture
def key() -> str:
    return f"sk-mpb-{secrets.token_hex(20)}"


@pytest.fixture
def served(key: str) -> Iterator[str]:
    """`python -m engine serve-sim --require-api-key-env MPB_SIM_KEY` as a real subprocess; yields its URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPB_SIM_KEY": key}
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve-sim", "--port", "0", "--tasks", "bfcl",
                             "--require-api-key-env", "MPB_SIM_KEY"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert key not in out and key not in err


def _key_nowhere(key: str, root: Path) -> None:
    needle = key.encode()
    for path in root.rglob("*"):
        if path.is_file():
            assert needle not in path.read_bytes(), path


@pytest.mark.slow
def test_endpoint_requiring_a_key_refuses_a_job_without_it(tmp_path: Path, served: str):
    out = tmp_path / "out"
    proc = job(out, "--task-endpoint", served, "--model-id", "m")
    assert_refused(proc, "task endpoint", served, "authentication failed (HTTP 401)", "$OPENAI_API_KEY")
    assert not out.exists()


@pytest.mark.slow
def test_wrong_key_is_refused_without_echoing_it(tmp_path: Path, served: str, key: str):
    out = tmp_path / "out"
    wrong = key[::-1]
    proc = job(out, "--task-endpoint", served, "--model-id", "m", env={"OPENAI_API_KEY": wrong})
    assert_refused(proc, "authentication failed (HTTP 401)")
    assert wrong not in proc.stderr and key not in proc.stderr
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("via", ["OPENAI_API_KEY", "--api-key-env"])
def test_job_with_the_key_completes_and_the_key_is_written_nowhere(tmp_path: Path, served: str, key: str,
                                                                    via: str):
    out = tmp_path / "out"
    if via == "OPENAI_API_KEY":
        proc = job(out, "--task-endpoint", served, "--model-id", "m", env={"OPENAI_API_KEY": key})
    else:
        proc = job(out, "--task-endpoint", served, "--model-id", "m", "--api-key-env", "MY_GATEWAY_KEY",
                   env={"MY_GATEWAY_KEY": key})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "completed"
    assert key not in proc.stdout and key not in proc.stderr
    card = tmp_path / "card"
    export = engine("card", "export", str(out), "--out", str(card))
    assert export.returncode == 0, export.stderr
    assert key not in export.stdout and key not in export.stderr
    _key_nowhere(key, out)  # job.json, artifacts, card.sqlite bytes (and its -wal/-shm if any)
    _key_nowhere(key, card)
    assert "MY_GATEWAY_KEY" not in (out / "job.json").read_text()  # not even the variable name is identity


@pytest.mark.slow
def test_explicit_key_variable_that_is_unset_is_refused(tmp_path: Path):
    out = tmp_path / "out"
    proc = job(out, "--api-key-env", "MPB_NOT_SET_ANYWHERE")
    assert_refused(proc, "$MPB_NOT_SET_ANYWHERE", "not set")
    assert not out.exists()


@pytest.mark.slow
def test_key_that_cannot_be_a_header_is_refused_without_echo(tmp_path: Path, key: str):
    out = tmp_path / "out"
    bad = key + "\nX-Injected: 1"
    proc = job(out, env={"OPENAI_API_KEY": bad})
    assert_refused(proc, "$OPENAI_API_KEY", "value not shown")
    assert key not in proc.stderr and not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--task-endpoint", "--reflection-endpoint", "TASK_ENDPOINTS",
                                  "REFLECTION_MODEL_BASE_URL"])
def test_url_with_embedded_credentials_is_refused_without_echo(tmp_path: Path, flag: str):
    out = tmp_path / "out"
    password = f"pw-{secrets.token_hex(12)}"
    url = f"http://alice:{password}@127.0.0.1:9/v1"
    if flag.startswith("--"):
        extra = [flag, url, "--model-id", "m"] + (["--task-endpoint", "http://127.0.0.1:9/v1"]
                                                  if flag == "--reflection-endpoint" else [])
        proc = job(out, *extra, method="gepa")
    else:
        proc = job(out, "--model-id", "m", method="gepa", env={flag: url})
    line = assert_refused(proc, "embeds credentials", "***@127.0.0.1:9")
    assert password not in proc.stderr and "alice" not in line
    assert not out.exists()


@pytest.mark.slow
def test_run_command_also_refuses_credentials_in_url(tmp_path: Path):
    password = f"pw-{secrets.token_hex(12)}"
    out = tmp_path / "pred.jsonl"
    proc = engine("run", "--cell", "task=bfcl,topology=single", "--limit", "2", "--out", str(out),
                  "--task-endpoint", f"https://bob:{password}@gpu0:8000/v1", "--model-id", "m")
    assert_refused(proc, "embeds credentials")
    assert password not in proc.stderr
    assert snapshot(tmp_path) == {".": snapshot(tmp_path)["."]}


def test_in_process_simulated_endpoint_can_require_a_key(key: str):
    with simulated_endpoint(["bfcl"], None, api_key=ApiKey(key, "TEST").reveal()) as url:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert httpx.post(f"{url}/chat/completions", json=body).status_code == 401
        assert httpx.get(f"{url}/models").status_code == 401
        wrong = httpx.post(f"{url}/chat/completions", json=body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json()["error"]["type"] == "AuthenticationError"
        ok = httpx.post(f"{url}/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
        assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"]


def test_sim_server_rejects_before_logging(key: str):
    with SimServer(build_policy(["bfcl"]), api_key=key) as sim:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert httpx.post(f"{sim.base_url}/chat/completions", json=body).status_code == 401
        assert sim.log == []


def test_scrub_and_repr_never_show_a_key(key: str):
    secret = ApiKey(key, "OPENAI_API_KEY")
    assert key not in repr(secret) and key not in str(secret) and key not in f"{secret!r} {[secret]}"
    assert scrub(f"boom Bearer {key} boom") == "boom Bearer *** boom"


@pytest.mark.slow
def test_serve_sim_refuses_an_unset_key_variable():
    proc = engine("serve-sim", "--port", "0", "--require-api-key-env", "MPB_NOT_SET_ANYWHERE")
    assert_refused(proc, "MPB_NOT_SET_ANYWHERE")


GEPA_SMALL = ["--budget", "60", "--allow-small-budget", "--reflection-model", "simulated-reflection"]


@pytest.mark.slow
def test_reflection_endpoint_has_its_own_key(tmp_path: Path, key: str):
    reflection_key = f"rk-{secrets.token_hex(16)}"
    with SimServer(build_policy(["bfcl"]), api_key=key) as task, \
            SimServer(build_policy(["bfcl"]), api_key=reflection_key) as reflection:
        argv = ["--task-endpoint", task.base_url, "--model-id", "m", "--reflection-endpoint", reflection.base_url,
                *GEPA_SMALL]
        refused = job(tmp_path / "a", *argv, method="gepa", env={"OPENAI_API_KEY": key})
        assert_refused(refused, "reflection endpoint", reflection.base_url, "HTTP 401", "$REFLECTION_API_KEY")
        assert not (tmp_path / "a").exists() and task.log == [] and reflection.log == []
        done = job(tmp_path / "b", *argv, method="gepa",
                   env={"OPENAI_API_KEY": key, "REFLECTION_API_KEY": reflection_key})
        assert done.returncode == 0, done.stderr
        assert any(e["kind"] == "reflection" for e in reflection.log)  # live reflection calls carried its key
        assert all(e["status"] != 401 for e in task.log + reflection.log)
    for secret in (key, reflection_key):
        assert secret not in done.stdout + done.stderr + refused.stderr
        _key_nowhere(secret, tmp_path / "b")


@pytest.mark.slow
def test_reflection_served_by_the_task_endpoint_uses_the_task_key(tmp_path: Path, key: str):
    with SimServer(build_policy(["bfcl"]), api_key=key) as sim:
        done = job(tmp_path / "j", "--task-endpoint", sim.base_url, "--model-id", "m", "--reflection-endpoint",
                   sim.base_url, *GEPA_SMALL, method="gepa", env={"OPENAI_API_KEY": key})
        assert done.returncode == 0, done.stderr
        assert any(e["kind"] == "reflection" for e in sim.log)
    _key_nowhere(key, tmp_path / "j")
