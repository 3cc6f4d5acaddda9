from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import anyio
import pytest

from benchmarks.apps import APPSBenchmark, BENCHMARK
from benchmarks.apps.scorer import call_matches, compare_stdout
from benchmarks.sandbox import SandboxLimits
from core.benchmark import Benchmark
from core.errors import DataError
from core.models import AgentOutput

FIXTURES = Path(__file__).parent / "fixtures"
IDS = ["2", "0", "1"]
BENCH = APPSBenchmark(limits=SandboxLimits(cpu_seconds=2, wall_seconds=4, memory_bytes=1024 ** 3))
PACKAGE = Path(__file__).parents[3] / "benchmarks" / "apps"
REFERENCE = Path("/work/shared/reference/benchmarks/apps/apps_splits.json")


@pytest.fixture(scope="module")
def rows():
    return {r.id: r for r in BENCH.load_rows(IDS, FIXTURES)}


def answer(code: str) -> AgentOutput:
    return AgentOutput(text=f"```python\n{code}```")


def test_protocol_splits_and_eval_manifest():
    assert isinstance(BENCHMARK, Benchmark)
    splits = BENCHMARK.splits()
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (150, 50, 50)
    assert list(splits.test) == [str(i) for i in range(50)]
    manifest = json.loads((PACKAGE / "apps_eval_ids.json").read_text())
    assert manifest["ids"] == list(splits.test) and manifest["n"] == 50
    if REFERENCE.exists():
        assert (PACKAGE / "apps_splits.json").read_bytes() == REFERENCE.read_bytes()


def test_loader_layout_and_private_fields(rows):
    assert [r.id for r in BENCH.load_rows(IDS, FIXTURES)] == IDS
    call, stdin = rows["2"], rows["0"]
    assert call.task["mode"] == "call" and call.gold["fn_name"] == "pair_sum"
    assert call.gold["tests"][0] == {"input": [[2, 7, 11, 15], 9], "output": [[0, 1]]}
    assert stdin.gold["tests"][1] == {"input": "1\n-7\n", "output": "-7\n"}
    assert len(stdin.gold["solutions"]) == 2
    for row in rows.values():
        public = json.dumps(row.public())
        assert "solutions" not in public and "tests" not in public
    prompt = BENCH.render_task(stdin)
    assert prompt.startswith("QUESTION:\n") and prompt.endswith("Use Standard Input format\nANSWER:\n")
    assert "def pair_sum(nums, target):\nUse Call-Based format\nANSWER:" in BENCH.render_task(call)


def test_loader_keeps_interview_only():
    with pytest.raises(DataError, match="4000 is introductory, not interview"):
        BENCH.load_rows(["0", "4000"], FIXTURES)


def test_missing_dir_wrong_layout_missing_id(tmp_path, monkeypatch):
    monkeypatch.delenv("APPS_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="codeparrot/apps"):
        BENCH.load_rows(IDS)
    with pytest.raises(DataError, match="test.jsonl"):
        BENCH.load_rows(IDS, tmp_path)
    record = json.loads((FIXTURES / "test.jsonl").read_text().splitlines()[0])
    del record["input_output"]
    (tmp_path / "test.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(DataError, match="input_output"):
        BENCH.load_rows(["0"], tmp_path)
    shutil.copy(FIXTURES / "test.jsonl", tmp_path / "test.jsonl")
    with pytest.raises(DataError, match="4999"):
        BENCH.load_rows(["0", "4999"], tmp_path)
    monkeypatch.setenv("APPS_DATA_DIR", str(tmp_path))
    assert BENCH.load_rows(["1"])[0].id == "1"


def test_stdin_cascade():
    assert compare_stdout("5\n", "5") is None
    assert compare_stdout("a b\nc\n", "a b  \n\n c\n") is None
    assert compare_stdout("0.333333333\n", "0.3333333") is None
    assert compare_stdout("2.5\n", "2.500000001\n") is None
    assert compare_stdout("2.5\n", "2.6\n") is not None
    assert compare_stdout("yes\n", "no\n") == "expected 'yes', got 'no'"


def test_call_cascade():
    assert call_matches([[0, 1]], [0, 1])
    assert call_matches(3, 3)
    assert call_matches([1.0000001], 1.0)
    assert call_matches([[1, 2, 3]], [3, 2, 1])
    assert call_matches([[0.12345, 2.0]], [2.0001, 0.1234])
    assert not call_matches([[0, 1]], [1, 2])
    assert not call_matches(["a"], "b")


@pytest.mark.slow
def test_right_wrong_malformed(rows):
    row = rows["1"]
    assert BENCH.score(row, answer("a, b = map(int, input().split())\nprint(a / b)\n")).value == 1.0
    wrong = BENCH.score(row, answer("print(0)\n"))
    assert wrong.value == 0.0 and wrong.feedback == "Wrong answer on test 1: expected '0.333333333', got '0'"
    crash = BENCH.score(row, answer("a, b = map(int, input().split())\nprint(a // (b - b))\n"))
    assert crash.feedback.startswith("Runtime error on test 1") and "ZeroDivisionError" in crash.feedback
    none = BENCH.score(row, AgentOutput(text="The answer is a/b."))
    assert none.malformed and none.value == 0.0
    call = rows["2"]
    assert BENCH.score(call, answer("def pair_sum(nums, target):\n    return [1, 2]\n")).feedback == \
        "Wrong answer on test 1: expected '[[0, 1]]', got '[1, 2]'"
    solution_class = "class Solution:\n    def pair_sum(self, nums, target):\n        return [0, 1] if nums[0] == 2 else [1, 2]\n"
    assert BENCH.score(call, answer(solution_class)).value == 1.0


@pytest.mark.slow
def test_runner_rule_uses_up_to_twenty_tests(rows):
    row = rows["0"]
    code = "input()\na = list(map(int, input().split()))\nprint(max(a) if len(a) != 2 else 0)\n"
    assert BENCH.score(row, answer(code)).value == 1.0
    runner = BENCH.score_runner(row, answer(code))
    assert runner.value == 0.0 and "test 4" in runner.feedback and runner.metadata["tests_total"] == 4


@pytest.mark.slow
def test_simulate(rows):
    for row in rows.values():
        assert BENCH.score_runner(row, AgentOutput(text=BENCH.simulate(row, None, random.Random(1)).content)).value == 1.0
        no_solutions = row.model_copy(update={"gold": {**row.gold, "solutions": []}})
        reply = BENCH.simulate(no_solutions, None, random.Random(1))
        assert BENCH.score_runner(no_solutions, AgentOutput(text=reply.content)).value == 1.0
        for mode in BENCH.failure_modes:
            score = BENCH.score(row, AgentOutput(text=BENCH.simulate(row, mode.name, random.Random(0)).content))
            assert score.value == 0.0 and re.search(mode.feedback_pattern, score.feedback), (mode.name, score.feedback)
    with pytest.raises(ValueError):
        BENCH.simulate(rows["0"], "nonsense", random.Random(0))


@pytest.mark.slow
def test_async_concurrent_scoring_keeps_order(rows):
    items = [rows[i] for i in IDS]

    async def main():
        results = [None] * len(items)

        async def one(i, row):
            results[i] = await BENCH.score_async(row, AgentOutput(text=BENCH.simulate(row, None, random.Random(0)).content))

        async with anyio.create_task_group() as tg:
            for i, row in enumerate(items):
                tg.start_soon(one, i, row)
        return results

    assert [s.value for s in anyio.run(main)] == [1.0, 1.0, 1.0]


def test_vote_key(rows):
    row = rows["0"]
    assert BENCH.vote_key(row, answer("print( 1 )  \n")) == "print( 1 )"
    assert BENCH.vote_key(row, AgentOutput(text=None)) is None
