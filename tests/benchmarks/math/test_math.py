import hashlib
import random
import re
from pathlib import Path

import pytest

from benchmarks.math import BENCHMARK, is_equiv, last_boxed, strip_string
from benchmarks.math.calculator import calculate
from benchmarks.math.loader import load_pool
from core.benchmark import Benchmark
from core.errors import DataError
from core.models import AgentOutput

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = FIXTURES / "good"
P1 = "Compute $\\arcsin \\left( -\\frac{\\sqrt{3}}{2} \\right).$  Express your answer in radians."


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _id(problem: str) -> str:
    return "math_" + hashlib.md5(problem.strip().encode()).hexdigest()[:10]


def test_protocol_and_splits():
    assert isinstance(BENCHMARK, Benchmark)
    splits = BENCHMARK.splits()
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (150, 50, 100)


def test_loader_filters_precalculus_level5_and_strips_gold():
    pool = load_pool(str(GOOD))
    assert len(pool) == 3  # Prealgebra and Level 2 rows dropped
    row = pool[_id(P1)]
    assert row.task == {"problem": P1, "subject": "Precalculus", "level": "Level 5"}
    assert row.gold["answer"] == "-\\frac{\\pi}{3}"
    assert "solution" in row.gold and "solution" not in row.task
    two_boxes = next(r for r in pool.values() if "determinant" in r.gold["solution"])
    assert two_boxes.gold["answer"] == "\\frac{3}{2}"  # the LAST boxed of the solution
    assert BENCHMARK.render_task(row) == P1


def test_loader_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("MATH_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="MATH_DATA_DIR"):
        BENCHMARK.load_rows(["math_x"])
    with pytest.raises(DataError, match="does not exist"):
        BENCHMARK.load_rows(["math_x"], str(tmp_path / "missing"))
    with pytest.raises(DataError, match="no JSON/JSONL/parquet file"):
        BENCHMARK.load_rows(["math_x"], str(tmp_path))
    with pytest.raises(DataError, match="solution"):
        BENCHMARK.load_rows(["math_x"], str(FIXTURES / "wrong_layout"))
    with pytest.raises(DataError, match="math_0000000000"):
        BENCHMARK.load_rows([_id(P1), "math_0000000000"], str(GOOD))
    (tmp_path / "t.parquet").write_bytes(b"PAR1")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        with pytest.raises(DataError, match="pyarrow"):
            BENCHMARK.load_rows(["math_x"], str(tmp_path))


@pytest.mark.parametrize("a,b", [
    ("\\frac12", "\\frac{1}{2}"),
    ("0.5", "\\frac{1}{2}"),
    ("\\dfrac{3}{4}", "3/4"),
    ("\\tfrac{3}{4}", "\\frac{3}{4}"),
    ("10^\\circ", "10"),
    ("10^{\\circ}", "10"),
    ("\\left( 1,2 \\right)", "(1,2)"),
    ("x = 5", "5"),
    ("\\sqrt3", "\\sqrt{3}"),
    ("\\$5", "5"),
    ("50\\%", "50"),
    (".5", "0.5"),
    ("\\frac1{72}", "\\frac{1}{72}"),
    ("5 \\text{ cm}", "5"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
])
def test_hendrycks_equivalent_pairs(a, b):
    assert is_equiv(a, b)


@pytest.mark.parametrize("a,b", [
    ("\\frac{1}{3}", "\\frac{1}{2}"),
    ("0.333", "\\frac{1}{3}"),  # no numeric tolerance in Hendrycks equivalence
    ("2", "-2"),
    ("xy = 5", "5"),  # only "x =" style prefixes of at most 2 characters are dropped
    ("\\pi/3", "\\frac{\\pi}{3}"),  # a/b rewriting is for integers only
])
def test_hendrycks_non_equivalent_pairs(a, b):
    assert not is_equiv(a, b)


def test_last_boxed_brace_counting():
    assert last_boxed("\\boxed{1} then \\boxed{\\frac{a}{b^{2}}}") == "\\frac{a}{b^{2}}"
    # protocol-v1 §10 names only \\boxed{} (brace counting): \\fbox and "\\boxed 5" are not answers
    assert last_boxed("\\fbox{7}") is None
    assert last_boxed("\\boxed 5$") is None
    assert last_boxed("\\boxed{unbalanced") is None
    assert last_boxed("no box") is None
    assert strip_string(" \\left( 1, 2 \\right) ") == "(1,2)"
    # protocol-v1 §10 (Hendrycks is_equiv, published code): only backslash-percent is dropped
    assert strip_string("50\\%") == "50" and strip_string("50%") == "50%"
    assert strip_string("50\\% of the total") == "50ofthetotal" and strip_string("50% of the total") == "50%ofthetotal"


def _row():
    return load_pool(str(GOOD))[_id(P1)]


def test_scorer_right_wrong_malformed():
    row = _row()
    right = BENCHMARK.score(row, AgentOutput(text="\\boxed{-\\dfrac{\\pi}{3}}\nbecause\n\\boxed{-\\dfrac{\\pi}{3}}"))
    assert right.value == 1.0 and "Correct" in right.feedback
    wrong = BENCHMARK.score(row, AgentOutput(text="\\boxed{\\frac{\\pi}{3}}"))
    assert wrong.value == 0.0 and wrong.feedback.startswith("Wrong answer") and "-\\frac{\\pi}{3}" in wrong.feedback
    decimal = BENCHMARK.score(row, AgentOutput(text="\\boxed{-1.0472}"))
    assert decimal.value == 0.0 and decimal.feedback.startswith("Decimal approximation")
    malformed = BENCHMARK.score(row, AgentOutput(text="the answer is -pi/3"))
    assert malformed.malformed and "No \\boxed{} answer found" in malformed.feedback
    assert BENCHMARK.score(row, AgentOutput(text=None)).malformed
    assert BENCHMARK.vote_key(row, AgentOutput(text="\\boxed{\\dfrac12}")) == BENCHMARK.vote_key(
        row, AgentOutput(text="\\boxed{0.5}"))
    assert BENCHMARK.vote_key(row, AgentOutput(text="none")) is None


def test_simulate_matches_failure_modes():
    rng = random.Random(3)
    for row in load_pool(str(GOOD)).values():
        assert BENCHMARK.score(row, AgentOutput(text=BENCHMARK.simulate(row, None, rng).content)).value == 1.0
        for mode in BENCHMARK.failure_modes:
            assert 0.15 <= mode.rate <= 0.3
            score = BENCHMARK.score(row, AgentOutput(text=BENCHMARK.simulate(row, mode.name, rng).content))
            assert score.value == 0.0, mode.name
            assert re.search(mode.feedback_pattern, score.feedback), (mode.name, score.feedback)
            others = [m for m in BENCHMARK.failure_modes if m is not mode]
            assert not any(re.search(m.feedback_pattern, score.feedback) for m in others), mode.name


def test_contract_mentions_boxed_first_and_last():
    assert "\\boxed" in BENCHMARK.contract(1) and "LAST" in BENCHMARK.contract(1)
    assert "PROTECTED FINAL OUTPUT CONTRACT" in BENCHMARK.contract(2)


@pytest.mark.parametrize("expression,expected", [
    ("2 + 3 * 4", "14"), ("2^10", "1024"), ("sqrt(2)**2", "2.0000000000000004"), ("log(e)", "1"),
    ("factorial(5)", "120"), ("cos(pi)", "-1"), ("1/0", None), ("10**100000", None), ("open('x')", None),
    ("().__class__", None), ("lambda: 1", None), ("", None),
])
def test_calculator_is_safe(expression, expected):
    result = calculate(expression)
    if expected is None:
        assert result.startswith("error:")
    else:
        assert result == expected


@pytest.mark.anyio
async def test_call_tool():
    row = _row()
    assert await BENCHMARK.call_tool(row, "calculator", {"expression": "asin(-sqrt(3)/2) / pi"}) == repr(-1 / 3)
    assert (await BENCHMARK.call_tool(row, "calculator", {})).startswith("error:")
