"""Scoring with the official AST checker: right, wrong and malformed answers, feedback text, and agreement
with calling bfcl_eval's checker directly on the raw fixture files."""

from __future__ import annotations

import json
import random
import re
import sys

import pytest

from benchmarks.bfcl import checker, data
from benchmarks.bfcl.scoring import CORRECT_FEEDBACK, FAILURE_MODES
from core.models import AgentOutput
from tests.benchmarks.bfcl.helpers import FIXTURE_IDS, raw_entries, requires_checker

pytestmark = requires_checker
PATTERNS = {mode.name: mode.feedback_pattern for mode in FAILURE_MODES}


def text_answer(calls) -> AgentOutput:
    return AgentOutput(text="Here is the call.\n```json\n" + json.dumps(calls) + "\n```")


def score_text(bench, row, calls):
    return bench.score(row, text_answer(calls))


def test_right_answers(bench, rows):
    cases = {
        "simple_0": [{"math.factorial": {"number": 7}}],
        "simple_1": [{"convert_temperature": {"value": 30, "from_unit": "c", "to_unit": "Fahrenheit", "precision": 1}}],
        "simple_2": [{"geo.distance": {"point_a": [1.5, 2.0], "point_b": [4.5, 6.0]}}],
        "multiple_0": [{"restaurant.book": {"name": "Luigi's", "party_size": 4, "time": "19:00"}}],
        "multiple_2": [{"profile_create": {"name": "Ada", "settings": {"theme": "dark", "language": "en"}}}],
        "parallel_1": [{"get_weather": {"city": "Rome"}}, {"get_weather": {"city": "Paris", "unit": "celsius"}}],
        "parallel_multiple_0": [{"currency.convert": {"amount": 100.0, "from_currency": "USD", "to_currency": "EUR"}},
                                {"stock.price": {"ticker": "AAPL"}}],
    }
    for row_id, calls in cases.items():
        result = score_text(bench, rows[row_id], calls)
        assert result.value == 1.0, (row_id, result.feedback)
        assert result.feedback == CORRECT_FEEDBACK and not result.malformed


def test_native_tool_calls_score_with_original_dotted_names(bench, rows):
    output = AgentOutput(tool_calls=({"name": "math_factorial", "arguments": '{"number": 7}'},))
    assert bench.score(rows["simple_0"], output).value == 1.0
    # in text the name is checked as written: the OpenAI-safe alias is not the function's name
    wrong = score_text(bench, rows["simple_0"], [{"math_factorial": {"number": 7}}])
    assert wrong.value == 0.0 and re.search(PATTERNS["wrong_function"], wrong.feedback)


@pytest.mark.parametrize("row_id, calls, kind, fragment", [
    ("simple_0", [{"math.gamma": {"number": 7}}], "wrong function name", "'math.factorial' not found"),
    ("simple_0", [{"math.factorial": {}}], "missing required parameter", "'number'"),
    ("simple_0", [{"math.factorial": {"number": 7, "exact": True}}], "unexpected parameter", "'exact'"),
    ("simple_0", [{"math.factorial": {"number": "7"}}], "wrong argument type", "Expected type integer, got str"),
    ("simple_0", [{"math.factorial": {"number": 8}}], "wrong argument value", "Expected one of [7]"),
    ("simple_0", [{"math.factorial": {"number": 7}}, {"math.factorial": {"number": 7}}],
     "wrong number of function calls", "Expected 1 call(s), got 2"),
    ("simple_3", [{"fuel.yearly_cost": {"miles": 15000, "price": 3.5}}], "missing required parameter", "'mpg'"),
    ("simple_1", [{"convert_temperature": {"value": 30.0, "from_unit": "C", "to_unit": "F"}}],
     "missing required parameter", "Optional parameter 'precision' not provided"),
    ("multiple_0", [{"restaurant.search": {"cuisine": "Italian", "city": "Rome"}}], "wrong function name",
     "'restaurant.book'"),
    ("multiple_2", [{"profile_create": {"name": "Ada", "settings": {"theme": "light", "language": "en"}}}],
     "wrong argument value", "'theme'"),
    ("parallel_0", [{"music.play": {"song": "Halo", "artist": "Beyonce", "minutes": 10}}],
     "wrong number of function calls", "Expected 2 call(s), got 1"),
    ("parallel_0", [{"music.play": {"song": "Yellow", "artist": "Coldplay", "minutes": 5}},
                    {"music.play": {"song": "Halo", "artist": "Beyonce"}}], "missing required parameter", "'minutes'"),
    ("parallel_0", [{"music.play": {"song": "Halo", "artist": "Beyonce", "minutes": 10}},
                    {"music.play": {"song": "Yellow", "artist": "Coldplay", "minutes": 50}}],
     "wrong argument value", "'minutes'"),
    ("parallel_multiple_0", [{"stock.price": {"ticker": "AAPL"}}, {"stock.price": {"ticker": "EUR"}}],
     "wrong function name", "currency.convert"),
])
def test_wrong_answers_name_the_error(bench, rows, row_id, calls, kind, fragment):
    result = score_text(bench, rows[row_id], calls)
    assert result.value == 0.0 and not result.malformed
    assert result.feedback.startswith(f"Incorrect: {kind}."), result.feedback
    assert fragment in result.feedback
    assert result.metadata["error_type"]


def test_malformed_answers(bench, rows):
    for output in (AgentOutput(text="The factorial of 7 is 5040."), AgentOutput(),
                   AgentOutput(text="```json\n[]\n```"),
                   AgentOutput(tool_calls=({"name": "math_factorial", "arguments": "{oops"},))):
        result = bench.score(rows["simple_0"], output)
        assert result.value == 0.0 and result.malformed
        assert re.search(PATTERNS["malformed_output"], result.feedback)
        assert bench.vote_key(rows["simple_0"], output) is None


def test_nested_type_mismatch_is_a_wrong_answer(bench, rows):
    calls = [{"bank.record": {"account": 42, "transactions": [["not", "dicts"], 3]}}, {"bank.balance": {"account": 42}}]
    result = score_text(bench, rows["parallel_multiple_1"], calls)
    assert result.value == 0.0 and not result.malformed
    assert re.search(PATTERNS["wrong_type_or_value"], result.feedback)


def test_a_checker_exception_on_an_answer_is_a_wrong_answer(bench, rows, monkeypatch):
    def explode(*args, **kwargs):
        raise KeyError("transactions")

    monkeypatch.setattr(checker, "run_ast_checker", explode)
    result = score_text(bench, rows["simple_0"], [{"math.factorial": {"number": 7}}])
    assert result.value == 0.0 and not result.malformed
    assert result.metadata["failure"] == "checker_exception" and "KeyError" in result.feedback


def test_feedback_kinds_are_exclusive(bench, rows):
    """Each failure mode's pattern matches its own feedback and no other mode's."""
    samples = {
        "wrong_function": [{"math.gamma": {"number": 7}}],
        "missing_argument": [{"math.factorial": {}}],
        "wrong_type_or_value": [{"math.factorial": {"number": 8}}],
        "malformed_output": None,
    }
    for mode, calls in samples.items():
        output = AgentOutput(text="no call") if calls is None else text_answer(calls)
        feedback = bench.score(rows["simple_0"], output).feedback
        matched = {name for name, pattern in PATTERNS.items() if re.search(pattern, feedback)}
        assert matched == {mode}, (mode, feedback)


def _direct_verdict(protocol_id: str, calls) -> bool:
    """bfcl_eval's ast_checker called directly on the raw fixture files (v4 category names)."""
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    pid = data.parse_id(protocol_id)
    entry = raw_entries(pid.file_category)[pid.source_id]
    answer = raw_entries(pid.file_category, answers=True)[pid.source_id]
    result = ast_checker(entry["function"], calls, answer["ground_truth"], Language.PYTHON, pid.file_category,
                         checker.MODEL_ID)
    return bool(result["valid"])


def test_scorer_agrees_with_the_checker_called_directly(bench, rows):
    checker.ensure_checker()  # registers MODEL_ID; the direct call below uses the same installed module
    rng = random.Random(7)
    checked = 0
    for protocol_id in FIXTURE_IDS:
        row = rows[protocol_id]
        replies = [bench.simulate(row, None, rng)] + [bench.simulate(row, m.name, rng) for m in FAILURE_MODES
                                                      if m.name != "malformed_output"]
        for reply in replies:
            calls = json.loads(reply.content.split("```json\n", 1)[1].rsplit("\n```", 1)[0])
            for output in (AgentOutput(text=reply.content), AgentOutput(tool_calls=reply.tool_calls)):
                assert bench.score(row, output).value == float(_direct_verdict(protocol_id, calls))
                checked += 1
    assert checked == len(FIXTURE_IDS) * 8


def test_checker_import_leaves_no_stand_in_module():
    checker.ensure_checker()
    stand_in = sys.modules.get("bfcl_eval.constants.model_config")
    assert stand_in is None or "stand-in" not in (stand_in.__doc__ or "")
    assert checker.bfcl_eval_version() is not None
