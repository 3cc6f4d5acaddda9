"""Hostile answers through a scorer: each is a semantic failure (score 0 with feedback), never a crash."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from benchmarks.apps import APPSBenchmark
from benchmarks.sandbox import SandboxLimits
from core.models import AgentOutput

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

FIXTURES = Path(__file__).parents[1] / "apps" / "fixtures"
LIMITS = SandboxLimits(cpu_seconds=1, wall_seconds=3, memory_bytes=512 * 1024 * 1024, output_bytes=64 * 1024)
BENCH = APPSBenchmark(limits=LIMITS)


@pytest.fixture(scope="module")
def row():
    return BENCH.load_rows(["0"], FIXTURES)[0]


def answer(code: str) -> AgentOutput:
    return AgentOutput(text=f"```python\n{code}```\n")


HOSTILE = {
    "infinite_loop": ("while True:\n    pass\n", r"Time limit exceeded on test 1"),
    "sleep": ("import time\ntime.sleep(60)\n", r"Time limit exceeded on test 1"),
    "memory_hog": ("x = bytearray(4 * 1024 ** 3)\n", r"Memory limit exceeded on test 1"),
    "fork_bomb": ("import os\nwhile True:\n    os.fork()\n", r"(Runtime error|Time limit exceeded) on test 1"),
    # the jail's /tmp is its own tmpfs: the write "works" there and never reaches the host's /tmp
    "write_outside": ("open('/tmp/mpb-hostile-write', 'w').write('x')\n", r"Wrong answer on test 1"),
    "write_home": ("open('/root/mpb-hostile-write', 'w').write('x')\n", r"Runtime error on test 1.*(Read-only|No such file)"),
    "network": ("import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)\n", r"Runtime error on test 1"),
    "secrets": ("import os\nprint(os.environ.get('OPENAI_API_KEY', 'none'))\n", r"Wrong answer on test 1.*got 'none'"),
    "huge_output": ("while True:\n    print('x' * 1000)\n", r"Output limit exceeded on test 1"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_answer_is_a_semantic_failure(name, row, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    code, pattern = HOSTILE[name]
    score = BENCH.score(row, answer(code))
    assert score.value == 0.0 and not score.malformed
    assert re.search(pattern, score.feedback, re.S), (name, score.feedback)
    assert "sk-test-secret" not in score.feedback
    assert not Path("/tmp/mpb-hostile-write").exists() and not Path("/root/mpb-hostile-write").exists()


def test_async_scoring_matches_sync(row):
    async def main():
        return await BENCH.score_async(row, answer("while True:\n    pass\n"))

    score = anyio.run(main)
    assert score.value == 0.0 and score.feedback.startswith("Time limit exceeded on test 1")
    assert json.dumps(score.metadata)
