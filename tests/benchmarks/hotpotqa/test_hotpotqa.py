import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.hotpotqa import BENCHMARK, HotpotQABenchmark, exact_match, extract_answer, f1, normalize_answer
from benchmarks.hotpotqa.loader import load_pool
from core.benchmark import Benchmark
from core.errors import DataError
from core.models import AgentOutput

FIXTURES = Path(__file__).parent / "fixtures"
ID_YES = "5a8b57f25542995d1e6f1371"
ID_BRIDGE = "5a8c7595554299585d9e36b6"


# An independent, deliberately plain re-implementation of hotpot_evaluate_v1.py's normalize/EM/F1.
def _ref_normalize(s: str) -> str:
    s = s.lower()
    out = []
    for ch in s:
        if ch not in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~":
            out.append(ch)
    s = "".join(out)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _ref_f1(pred: str, gold: str) -> float:
    p, g = _ref_normalize(pred), _ref_normalize(gold)
    if p in ["yes", "no", "noanswer"] and p != g:
        return 0.0
    if g in ["yes", "no", "noanswer"] and p != g:
        return 0.0
    pt, gt = p.split(), g.split()
    remaining = list(gt)
    same = 0
    for tok in pt:
        if tok in remaining:
            remaining.remove(tok)
            same += 1
    if same == 0:
        return 0.0
    precision, recall = same / len(pt), same / len(gt)
    return 2 * precision * recall / (precision + recall)


WORDS = st.sampled_from(["the", "a", "an", "The", "AN", "yes", "no", "noanswer", "Paris", "paris,", "U.S.",
                         "New", "York", "cat's", "  ", "\t", "-", "1990", "theatre", "another", "A.", "(film)"])
PHRASES = st.lists(WORDS, max_size=6).map(" ".join) | st.text(max_size=20)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(PHRASES, PHRASES)
def test_em_and_f1_match_reference_definition(pred, gold):
    assert normalize_answer(pred) == _ref_normalize(pred)
    assert exact_match(pred, gold) == (_ref_normalize(pred) == _ref_normalize(gold))
    assert f1(pred, gold) == pytest.approx(_ref_f1(pred, gold))


@pytest.mark.parametrize("pred,gold,em,f1_value", [
    ("The Beatles", "Beatles", True, 1.0),
    ("an apple", "Apple!", True, 1.0),
    ("  New   York  City ", "new york city", True, 1.0),
    ("U.S.A.", "USA", True, 1.0),
    ("yes", "no", False, 0.0),
    ("yes it is", "yes", False, 0.0),  # no partial credit against yes/no gold
    ("no", "noanswer", False, 0.0),
    ("Chief of Protocol of the United States", "Chief of Protocol", False, 2 / 3),  # P 3/6, R 3/3
    ("theatre", "the atre", False, 0.0),  # "the" is an article only as a whole word
    ("the the the", "", True, 0.0),
])
def test_official_tricky_cases(pred, gold, em, f1_value):
    assert exact_match(pred, gold) is em
    assert f1(pred, gold) == pytest.approx(f1_value)


def test_extraction_rules():
    assert extract_answer("reasoning\nAnswer: Paris\nmore text") == ("Paris", True)
    assert extract_answer("answer: first\nANSWER: **second**") == ("second", True)
    assert extract_answer("Final Answer:\nLondon") == ("London", True)
    assert extract_answer("no tag\n\nBerlin\n\n") == ("Berlin", False)
    assert extract_answer("") == (None, False)
    assert extract_answer(None) == (None, False)


def test_protocol_and_splits():
    assert isinstance(BENCHMARK, Benchmark)
    splits = BENCHMARK.splits()
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (150, 50, 100)


@pytest.mark.parametrize("layout", ["hf", "original"])
def test_loader_both_layouts(layout):
    rows = BENCHMARK.load_rows([ID_BRIDGE, ID_YES], str(FIXTURES / layout))
    assert [r.id for r in rows] == [ID_BRIDGE, ID_YES]
    row = rows[0]
    assert row.task == {"question": row.task["question"], "type": "bridge", "level": "hard"}
    assert row.gold["answer"] == "Chief of Protocol"
    assert row.gold["supporting_facts"] == [["Kiss and Tell (1945 film)", 0], ["Shirley Temple", 2]]
    assert [title for title, _ in row.gold["context"]][:2] == ["Kiss and Tell (1945 film)", "Shirley Temple"]
    assert "Chief of Protocol" not in BENCHMARK.render_task(row)


def test_loader_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("HOTPOTQA_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="HOTPOTQA_DATA_DIR"):
        BENCHMARK.load_rows([ID_YES])
    with pytest.raises(DataError, match="does not exist"):
        BENCHMARK.load_rows([ID_YES], str(tmp_path / "nope"))
    with pytest.raises(DataError, match="hotpot_dev_distractor_v1.json"):
        BENCHMARK.load_rows([ID_YES], str(tmp_path))
    with pytest.raises(DataError, match="context"):
        BENCHMARK.load_rows(["x1"], str(FIXTURES / "wrong_layout"))
    with pytest.raises(DataError, match="5a0000000000000000000000"):
        BENCHMARK.load_rows([ID_YES, "5a0000000000000000000000"], str(FIXTURES / "hf"))
    monkeypatch.setenv("HOTPOTQA_DATA_DIR", str(FIXTURES / "hf"))
    assert BENCHMARK.load_rows([ID_YES])[0].gold["answer"] == "yes"


def _rows():
    pool = load_pool(str(FIXTURES / "hf"))
    return pool[ID_YES], pool[ID_BRIDGE]


def test_scorer_right_wrong_malformed():
    _, row = _rows()
    right = BENCHMARK.score(row, AgentOutput(text="She served as chief of protocol.\nAnswer: chief of protocol."))
    assert right.value == 1.0 and right.metadata["wiki_mode"] == "none"
    long = BENCHMARK.score(row, AgentOutput(text="Answer: Chief of Protocol of the United States"))
    assert long.value == 0.0 and "Answer too long" in long.feedback
    wrong = BENCHMARK.score(row, AgentOutput(text="Answer: Ambassador to Ghana"))
    assert wrong.value == 0.0 and "Answer mismatch" in wrong.feedback and "'Chief of Protocol'" in wrong.feedback
    no_line = BENCHMARK.score(row, AgentOutput(text="I think it is Ambassador"))
    assert "No 'Answer:' line found" in no_line.feedback and not no_line.malformed
    empty = BENCHMARK.score(row, AgentOutput(text="  \n"))
    assert empty.malformed and empty.value == 0.0
    assert BENCHMARK.score_f1(row, AgentOutput(text="Answer: Chief of Protocol of the United States")) == \
        pytest.approx(2 / 3)
    assert BENCHMARK.vote_key(row, AgentOutput(text="Answer: The Chief of Protocol!")) == "chief of protocol"
    assert BENCHMARK.vote_key(row, AgentOutput(text="")) is None


def test_simulate_matches_failure_modes():
    rng = random.Random(1)
    for row in _rows():
        assert BENCHMARK.score(row, AgentOutput(text=BENCHMARK.simulate(row, None, rng).content)).value == 1.0
        for mode in BENCHMARK.failure_modes:
            assert 0.15 <= mode.rate <= 0.3
            score = BENCHMARK.score(row, AgentOutput(text=BENCHMARK.simulate(row, mode.name, rng).content))
            assert score.value == 0.0, (mode.name, row.id)
            assert re.search(mode.feedback_pattern, score.feedback), (mode.name, score.feedback)
