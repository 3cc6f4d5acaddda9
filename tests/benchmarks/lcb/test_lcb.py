from __future__ import annotations

import base64
import json
import pickle
import random
import re
import shutil
import zlib
from pathlib import Path

import anyio
import pytest

from benchmarks.lcb import BENCHMARK, LCBBenchmark, decode_test_cases
from benchmarks.lcb.scorer import compare_stdout
from benchmarks.sandbox import SandboxLimits
from core.benchmark import Benchmark
from core.errors import DataError
from core.models import AgentOutput

FIXTURES = Path(__file__).parent / "fixtures"
IDS = ["3608", "1873_A", "abc384_b"]
BENCH = LCBBenchmark(limits=SandboxLimits(cpu_seconds=2, wall_seconds=4, memory_bytes=1024 ** 3))
PACKAGE = Path(__file__).parents[3] / "benchmarks" / "lcb"
REFERENCE = Path("/work/shared/reference/benchmarks/lcb/lcb_splits.json")


@pytest.fixture(scope="module")
def rows():
    return {r.id: r for r in BENCH.load_rows(IDS, FIXTURES)}


def answer(code: str) -> AgentOutput:
    return AgentOutput(text=f"Solution:\n```python\n{code}```")


def test_satisfies_protocol_and_splits():
    assert isinstance(BENCHMARK, Benchmark)
    splits = BENCHMARK.splits()
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (150, 50, 50)
    assert splits.eval_ids == splits.test
    manifest = json.loads((PACKAGE / "lcb_eval_ids.json").read_text())
    assert manifest["ids"] == list(splits.test) and manifest["n"] == 50 and manifest["dataset"] == "lcb"
    assert {"dataset", "sample", "n", "source", "ids"} == set(manifest)
    if REFERENCE.exists():
        assert (PACKAGE / "lcb_splits.json").read_bytes() == REFERENCE.read_bytes()


def test_loader_layout_order_and_private_fields(rows):
    loaded = BENCH.load_rows(IDS, FIXTURES)
    assert [r.id for r in loaded] == IDS
    fn, stdin = rows["3608"], rows["1873_A"]
    assert fn.task["mode"] == "functional" and fn.gold["func_name"] == "maxSum"
    assert stdin.task["mode"] == "stdin"
    assert len(stdin.gold["private_tests"]) == 4 and stdin.gold["private_tests"][0]["input"] == "1\n5 5\n"
    for row in rows.values():
        public = json.dumps(row.public())
        assert "private_test" not in public and "public_test" not in public and "reference_solution" not in public
        assert "2000000000" not in BENCH.render_task(row)
    assert "class Solution" in BENCH.render_task(fn) and "stdin" in BENCH.render_task(stdin)


def test_loader_reads_env_var(monkeypatch):
    monkeypatch.setenv("LCB_DATA_DIR", str(FIXTURES))
    assert BENCH.load_rows(["1873_A"])[0].id == "1873_A"


def test_missing_directory_and_files(tmp_path, monkeypatch):
    monkeypatch.delenv("LCB_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="livecodebench/code_generation_lite"):
        BENCH.load_rows(IDS)
    with pytest.raises(DataError, match="does not exist"):
        BENCH.load_rows(IDS, tmp_path / "nope")
    with pytest.raises(DataError, match=r"no test\*\.jsonl"):
        BENCH.load_rows(IDS, tmp_path)


def test_wrong_layout_names_the_field(tmp_path):
    record = json.loads((FIXTURES / "test.jsonl").read_text().splitlines()[0])
    del record["private_test_cases"]
    (tmp_path / "test.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(DataError, match="private_test_cases"):
        BENCH.load_rows(["1873_A"], tmp_path)


def test_missing_id_is_named(tmp_path):
    shutil.copy(FIXTURES / "test.jsonl", tmp_path / "test.jsonl")
    with pytest.raises(DataError, match="abc999_z"):
        BENCH.load_rows(["1873_A", "abc999_z"], tmp_path)


def test_decoding_refuses_pickled_objects():
    tests = [{"input": "1", "output": "2", "testtype": "stdin"}]
    good = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()
    assert decode_test_cases(good) == tests
    assert decode_test_cases(json.dumps(tests)) == tests
    evil = base64.b64encode(zlib.compress(pickle.dumps(Path("/etc/passwd")))).decode()
    with pytest.raises(DataError, match="not allowed"):
        decode_test_cases(evil)
    with pytest.raises(DataError):
        decode_test_cases("!!not base64 or json!!")


def test_stdin_comparison_rule():
    assert compare_stdout("3\n7\n", "3\n7\n") is None
    assert compare_stdout("3\n7\n", "  3 \n7") is None
    assert compare_stdout("2.50\n", "2.5\n") is None
    assert compare_stdout("1 2.0\n", "1.0 2\n") is None
    assert "line 2" in compare_stdout("3\n7\n", "3\n8\n")
    assert "output line" in compare_stdout("3\n7\n", "3\n")


def test_right_wrong_and_malformed_answers(rows):
    row = rows["1873_A"]
    right = BENCH.score(row, answer(row.gold["reference_solution"]))
    assert right.value == 1.0 and right.feedback == "All 3 tests passed."
    wrong = BENCH.score(row, answer("import sys\nprint(0)\n"))
    assert wrong.value == 0.0 and "Wrong answer on test 1: line 1: expected '10', got '0'" in wrong.feedback
    crash = BENCH.score(row, answer("int('x')\n"))
    assert crash.value == 0.0 and crash.feedback.startswith("Runtime error on test 1") and "ValueError" in crash.feedback
    none = BENCH.score(row, AgentOutput(text="I think the answer is 42."))
    assert none.value == 0.0 and none.malformed and "No fenced python code block" in none.feedback
    bad = BENCH.score(row, AgentOutput(text="```python\nfor x in :\n```"))
    assert bad.value == 0.0 and not bad.malformed and bad.feedback.startswith("Syntax error")


def test_functional_scoring(rows):
    row = rows["3608"]
    ok = "class Solution:\n    def maxSum(self, nums: List[int], k: int) -> int:\n        return sum(sorted(nums)[-k:])\n"
    assert BENCH.score(row, answer(ok)).value == 1.0
    off = "class Solution:\n    def maxSum(self, nums, k):\n        return sum(nums)\n"
    wrong = BENCH.score(row, answer(off))
    assert wrong.value == 0.0 and "Wrong answer on test 1: expected '5', got '7'" in wrong.feedback
    missing = BENCH.score(row, answer("class Solution:\n    pass\n"))
    assert missing.value == 0.0 and "AttributeError" in missing.feedback


@pytest.mark.slow
def test_protocol_rule_uses_first_three_tests_runner_uses_all(rows):
    row = rows["1873_A"]
    # passes tests 1-3 but not test 4 ("2 2" -> 4)
    code = "import sys\nd = sys.stdin.read().split()\nt = int(d[0])\nprint('\\n'.join(str(int(d[1+2*i]) + int(d[2+2*i])) if d[1+2*i] != '2' else '5' for i in range(t)))\n"
    assert BENCH.score(row, answer(code)).value == 1.0
    runner = BENCH.score_runner(row, answer(code))
    assert runner.value == 0.0 and "test 4" in runner.feedback


@pytest.mark.slow
def test_simulate_correct_and_each_mode(rows):
    for row in rows.values():
        for seed in range(2):
            reply = BENCH.simulate(row, None, random.Random(seed))
            assert BENCH.score(row, AgentOutput(text=reply.content)).value == 1.0
        stripped = row.model_copy(update={"gold": {k: v for k, v in row.gold.items() if k != "reference_solution"}})
        assert BENCH.score_runner(stripped, AgentOutput(text=BENCH.simulate(stripped, None, random.Random(0)).content)).value == 1.0
        for mode in BENCH.failure_modes:
            score = BENCH.score(row, AgentOutput(text=BENCH.simulate(row, mode.name, random.Random(0)).content))
            assert score.value == 0.0 and re.search(mode.feedback_pattern, score.feedback), (row.id, mode.name, score.feedback)
            assert 0.15 <= mode.rate <= 0.3 and mode.remedy


def test_async_scoring(rows):
    row = rows["3608"]

    async def main():
        return await BENCH.score_async(row, AgentOutput(text=BENCH.simulate(row, None, random.Random(0)).content))

    assert anyio.run(main).value == 1.0


def test_vote_key_contract_tools(rows):
    row = rows["1873_A"]
    a = BENCH.vote_key(row, answer("print(1)   \n\n"))
    assert a == BENCH.vote_key(row, answer("print(1)\n")) == "print(1)"
    assert BENCH.vote_key(row, AgentOutput(text="nothing")) is None
    assert "PROTECTED FINAL OUTPUT CONTRACT" in BENCH.contract(1) and "python" in BENCH.contract(2)
    assert BENCH.contract(2) != BENCH.contract(1)
    assert [t["function"]["name"] for t in BENCH.native_tools(row)] == ["python_exec"]  # section 10
