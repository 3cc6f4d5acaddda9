"""Against the data shipped in the installed bfcl-eval wheel: every split ID resolves, and the simulated
replies behave on every split row (skipped when bfcl_eval is not installed)."""

from __future__ import annotations

import random
import re

import pytest

from benchmarks.bfcl import BENCHMARK, data
from benchmarks.bfcl.scoring import FAILURE_MODES
from core.models import AgentOutput
from tests.benchmarks.bfcl.helpers import requires_checker

pytestmark = requires_checker


@pytest.fixture(scope="module")
def split_rows():
    # the real package data, even when a developer has BFCL_DATA_DIR set
    splits = BENCHMARK.splits()
    ids = list(splits.train + splits.validation + splits.test)
    return BENCHMARK.load_rows(ids, data_dir=str(data.resolve_data_dir_from_package()))


def test_all_300_split_ids_resolve(split_rows):
    splits = BENCHMARK.splits()
    assert len(split_rows) == 300
    assert [row.id for row in split_rows] == list(splits.train + splits.validation + splits.test)
    for row in split_rows:
        assert row.task["functions"] and row.task["question"] and row.gold["ground_truth"]


def test_simple_ids_are_the_v3_questions():
    # BFCL v3 simple_1 / simple_399 (gorilla repo, BFCL_v3_simple.json) are v4 simple_python_1 / _399
    first, last = BENCHMARK.load_rows(["simple_1", "simple_399"], data_dir=str(data.resolve_data_dir_from_package()))
    assert first.task["question"][0]["content"] == "Calculate the factorial of 5 using math functions."
    assert first.task["functions"][0]["name"] == "math.factorial"
    assert last.task["question"][0]["content"].startswith("Find me the best Italian restaurants in New York City")
    assert last.task["functions"][0]["name"] == "restaurant_search"


def test_simulated_replies_on_every_split_row(split_rows):
    for row in split_rows:
        rng = random.Random(row.id)
        assert BENCHMARK.score(row, AgentOutput(tool_calls=BENCHMARK.simulate(row, None, rng).tool_calls)).value == 1
        for mode in FAILURE_MODES:
            reply = BENCHMARK.simulate(row, mode.name, rng)
            result = BENCHMARK.score(row, AgentOutput(text=reply.content, tool_calls=reply.tool_calls))
            assert result.value == 0 and re.search(mode.feedback_pattern, result.feedback), (row.id, mode.name)
