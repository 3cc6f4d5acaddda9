"""`sweep serve`: one server per (fake) GPU with CUDA_VISIBLE_DEVICES, ready, used by a sweep, stopped on SIGINT;
without vLLM or GPUs it fails with one line and exit 2."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.sim.requestlog import read_log_file
from tests.engine.sweep.sweeputil import ROOT, sweep

pytestmark = pytest.mark.slow  # end-to-end sweeps: left out of the fast loop (-m "not slow")


def _refused(url: str) -> bool:
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) != 0


def wait_for_endpoints(proc: subprocess.Popen[str], endpoints: Path) -> list[str]:
    """The URLs `sweep serve` wrote to its endpoints file once its servers answered (or its stderr if it ended)."""
    deadline = time.monotonic() + 90
    while not endpoints.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert endpoints.exists(), proc.stderr.read() if proc.poll() is not None and proc.stderr else "not ready"
    return endpoints.read_text().split()


def test_serve_starts_servers_per_gpu_used_by_a_sweep_and_stops_them(tmp_path):
    endpoints = tmp_path / "endpoints.txt"
    template = (f"sh -c 'echo $CUDA_VISIBLE_DEVICES > {tmp_path}/gpu-{{gpu}}.env; exec {sys.executable} -m engine "
                f"serve-sim --tasks bfcl --port {{port}} --log {tmp_path}/requests-{{gpu}}.jsonl'")
    proc = subprocess.Popen([sys.executable, "-m", "engine", "sweep", "serve", "--model", "sim-task-model", "--gpus",
                             "0,1", "--base-port", "0", "--server-cmd", template, "--endpoints-file", str(endpoints),
                             "--log-dir", str(tmp_path / "logs"), "--startup-timeout", "60"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        urls = wait_for_endpoints(proc, endpoints)
        assert len(urls) == 2
        assert [(tmp_path / f"gpu-{g}.env").read_text().strip() for g in "01"] == ["0", "1"]
        run = sweep("run", "--sweep-dir", str(tmp_path / "sw"), "--endpoints-file", str(endpoints), "--runtime", "native", "--tasks",
                    "bfcl", "--methods", "identity", "--topologies", "single", "--table", "3", "--seeds", "0,1",
                    "--model-id", "sim-task-model", "--no-aggregate")
        assert run.returncode == 0, run.stderr[-2000:]
        for g in "01":  # both servers answered the sweep's rollouts
            served = [e for e in read_log_file(tmp_path / f"requests-{g}.jsonl") if e.get("kind") == "answer"]
            assert served
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.split() == urls and "servers stopped" in err
    assert all(_refused(u) for u in urls) and not endpoints.exists()


@pytest.mark.parametrize("gpus", ["0", "0,1"])
def test_serve_without_vllm_or_gpus_is_one_line_exit_2(tmp_path, gpus):
    proc = sweep("serve", "--model", "Qwen/Qwen3.5-9B", "--gpus", gpus, "--log-dir", str(tmp_path / "logs"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "vLLM is not installed" in proc.stderr or "GPU" in proc.stderr


def test_serve_rejects_bad_gpu_lists_and_templates(tmp_path):
    for args in (["--gpus", "0,0"], ["--gpus", "a"], ["--gpus", "0", "--server-cmd", "x {nope}"]):
        proc = sweep("serve", "--model", "m", *args, "--log-dir", str(tmp_path / "logs"))
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_serve_without_gpus_starts_one_cpu_server(tmp_path):
    """No --gpus: one server on the CPU (CUDA_VISIBLE_DEVICES empty, {gpu} = cpu, log server-cpu.log), no GPU asked."""
    endpoints = tmp_path / "endpoints.txt"
    template = (f"sh -c 'echo \"[$CUDA_VISIBLE_DEVICES]\" > {tmp_path}/slot-{{gpu}}.env; exec {sys.executable} -m "
                f"engine serve-sim --tasks bfcl --port {{port}}'")
    proc = subprocess.Popen([sys.executable, "-m", "engine", "sweep", "serve", "--model", "sim-task-model",
                             "--base-port", "0", "--server-cmd", template, "--endpoints-file", str(endpoints),
                             "--log-dir", str(tmp_path / "logs"), "--startup-timeout", "60"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CUDA_VISIBLE_DEVICES": "0", "PYTHONPATH": str(ROOT)})
    try:
        urls = wait_for_endpoints(proc, endpoints)
        assert len(urls) == 1
        assert (tmp_path / "slot-cpu.env").read_text().strip() == "[]"  # no GPU visible to the server
        assert (tmp_path / "logs" / "server-cpu.log").exists()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.split() == urls and "1 server(s) ready" in err and _refused(urls[0])


def test_serve_without_gpus_and_without_vllm_is_one_line_exit_2(tmp_path):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here: a CPU server would really start")
    proc = sweep("serve", "--model", "Qwen/Qwen3.5-9B", "--log-dir", str(tmp_path / "logs"))
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "vLLM is not installed" in proc.stderr and "GPU" not in proc.stderr
