import hashlib
import random
import re
from pathlib import Path

import pytest

from benchmarks.gpqa import BENCHMARK, extract_letter
from benchmarks.gpqa.loader import load_pool, shuffle_options
from core.benchmark import Benchmark
from core.errors import DataError
from core.models import AgentOutput

FIXTURES = Path(__file__).parent / "fixtures"
Q2 = 'Which of the following is the product of a Diels-Alder reaction between "butadiene" and ethylene, after full hydrogenation?'


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _id(question: str) -> str:
    return "gpqa_" + hashlib.md5(question.strip().encode()).hexdigest()[:10]


def test_protocol_and_splits():
    assert isinstance(BENCHMARK, Benchmark)
    splits = BENCHMARK.splits()
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (48, 50, 100)
    assert splits.eval_ids == splits.test


def test_loader_ids_options_and_private_fields():
    pool = load_pool(str(FIXTURES))
    assert len(pool) == 3
    row = pool[_id(Q2)]
    assert set(row.task) == {"question", "options"}
    assert sorted(row.task["options"]) == sorted(["cyclohexane", "benzene", "hexane", "cyclohexene"])
    letter = row.gold["correct_letter"]
    assert row.task["options"]["ABCD".index(letter)] == "cyclohexane"
    assert set(row.gold) == {"correct_letter", "correct_answer", "incorrect_answers", "raw"}
    assert "cyclohexane" not in str(row.public()).replace(str(row.task["options"]), "")
    # the ordering depends only on (seed, id)
    options, gold_letter = shuffle_options("cyclohexane", ["benzene", "hexane", "cyclohexene"], f"0|{row.id}")
    assert (options, gold_letter) == (row.task["options"], letter)
    rendered = BENCHMARK.render_task(row)
    assert rendered.startswith(Q2) and "\nA) " in rendered and "\nD) " in rendered


def test_loader_multiline_question_is_stripped_for_id(monkeypatch):
    monkeypatch.setenv("GPQA_DATA_DIR", str(FIXTURES))
    ids = [r for r in load_pool() if r != _id(Q2)]
    assert all(re.fullmatch(r"gpqa_[0-9a-f]{10}", i) for i in ids)
    rows = BENCHMARK.load_rows(ids)
    assert [r.id for r in rows] == ids
    assert all(not r.task["question"].endswith("\n") for r in rows)


def test_loader_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("GPQA_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="GPQA_DATA_DIR"):
        BENCHMARK.load_rows(["gpqa_0"])
    with pytest.raises(DataError, match="does not exist"):
        BENCHMARK.load_rows(["gpqa_0"], str(tmp_path / "nope"))
    with pytest.raises(DataError, match="gpqa_diamond.csv not found"):
        BENCHMARK.load_rows(["gpqa_0"], str(tmp_path))
    with pytest.raises(DataError, match="Incorrect Answer 2"):
        BENCHMARK.load_rows(["gpqa_0"], str(FIXTURES / "wrong_layout"))
    with pytest.raises(DataError, match="gpqa_0000000000"):
        BENCHMARK.load_rows([_id(Q2), "gpqa_0000000000"], str(FIXTURES))


@pytest.mark.parametrize("text,letter", [
    ("Reasoning...\nAnswer: B", "B"),
    ("**Answer:** C", "C"),
    ("Final answer: (D)", "D"),
    ("Final answer: (d)", None),  # section 10: X is an upper-case option letter
    ("I first thought Answer: A but the final answer: C", "C"),
    ("The correct option is B.", "B"),
    ("choice: A", "A"),
    ("Long reasoning\nD\n", "D"),
    ("Answer: because the energy is low", None),
    ("no letter here", None),
    ("", None),
])
def test_extraction(text, letter):
    assert extract_letter(text) == letter


def test_pattern_priority_answer_over_option():
    # last match of the FIRST pattern that matches, not the last letter overall
    assert extract_letter("Answer: B\nbut option C also looks plausible") == "B"


def _row():
    return load_pool(str(FIXTURES))[_id(Q2)]


def test_scorer_right_wrong_malformed():
    row = _row()
    gold = row.gold["correct_letter"]
    wrong = next(x for x in "ABCD" if x != gold)
    right = BENCHMARK.score(row, AgentOutput(text=f"Answer: {gold}"))
    assert right.value == 1.0 and not right.malformed
    bad = BENCHMARK.score(row, AgentOutput(text=f"Answer: {wrong}"))
    assert bad.value == 0.0 and f"answered {wrong}" in bad.feedback and f"correct option is {gold}" in bad.feedback
    none = BENCHMARK.score(row, AgentOutput(text=None))
    assert none.malformed and "No answer letter found" in none.feedback
    assert BENCHMARK.vote_key(row, AgentOutput(text="Answer: C")) == "C"
    assert BENCHMARK.vote_key(row, AgentOutput(text="Answer: c")) is None  # abstains (section 2.2 vote rule)
    assert BENCHMARK.vote_key(row, AgentOutput(text="hmm")) is None


def test_simulate_matches_failure_modes():
    row = _row()
    rng = random.Random(0)
    assert BENCHMARK.score(row, AgentOutput(text=BENCHMARK.simulate(row, None, rng).content)).value == 1.0
    for mode in BENCHMARK.failure_modes:
        assert 0.15 <= mode.rate <= 0.3
        reply = BENCHMARK.simulate(row, mode.name, rng)
        score = BENCHMARK.score(row, AgentOutput(text=reply.content))
        assert score.value == 0.0, mode.name
        assert re.search(mode.feedback_pattern, score.feedback), (mode.name, score.feedback)
        others = [m for m in BENCHMARK.failure_modes if m is not mode]
        assert not any(re.search(m.feedback_pattern, score.feedback) for m in others), mode.name


def test_contract_and_calculator_tool():
    assert "Answer: X" in BENCHMARK.contract(1)
    assert "PROTECTED FINAL OUTPUT CONTRACT" in BENCHMARK.contract(2)
    row = _row()
    assert [t["function"]["name"] for t in BENCHMARK.native_tools(row)] == ["calculator"]


@pytest.mark.anyio
async def test_call_tool_calculator():
    row = _row()
    assert await BENCHMARK.call_tool(row, "calculator", {"expression": "sqrt(16) + 2**3"}) == "12"
    assert (await BENCHMARK.call_tool(row, "calculator", {"expression": "__import__('os')"})).startswith("error:")
    assert (await BENCHMARK.call_tool(row, "search", {})).startswith("error: unknown tool")
