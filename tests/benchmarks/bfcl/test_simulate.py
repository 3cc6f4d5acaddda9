"""simulate(): correct replies pass the official checker; each failure mode's reply fails with its feedback."""

from __future__ import annotations

import random
import re

import pytest

from benchmarks.bfcl.scoring import FAILURE_MODES
from core.models import AgentOutput
from tests.benchmarks.bfcl.helpers import FIXTURE_IDS, requires_checker


def outputs(reply):
    yield AgentOutput(text=reply.content, tool_calls=reply.tool_calls)  # native tool calling
    yield AgentOutput(text=reply.content)  # text contract (multi-agent roles)


@requires_checker
@pytest.mark.parametrize("row_id", list(FIXTURE_IDS))
def test_correct_replies_score_one(bench, rows, row_id):
    for seed in range(3):
        reply = bench.simulate(rows[row_id], None, random.Random(seed))
        for output in outputs(reply):
            result = bench.score(rows[row_id], output)
            assert result.value == 1.0, (row_id, result.feedback)


@requires_checker
@pytest.mark.parametrize("mode", [m.name for m in FAILURE_MODES])
@pytest.mark.parametrize("row_id", list(FIXTURE_IDS))
def test_each_mode_scores_zero_with_its_feedback(bench, rows, row_id, mode):
    pattern = next(m.feedback_pattern for m in FAILURE_MODES if m.name == mode)
    for seed in range(3):
        reply = bench.simulate(rows[row_id], mode, random.Random(seed))
        for output in outputs(reply):
            result = bench.score(rows[row_id], output)
            assert result.value == 0.0, (row_id, mode)
            assert re.search(pattern, result.feedback), (row_id, mode, result.feedback)
            others = [m.name for m in FAILURE_MODES
                      if m.name != mode and re.search(m.feedback_pattern, result.feedback)]
            assert not others, (row_id, mode, result.feedback)


def test_simulate_is_deterministic_given_rng(bench, rows):
    for mode in [None] + [m.name for m in FAILURE_MODES]:
        for row in rows.values():
            assert bench.simulate(row, mode, random.Random(3)) == bench.simulate(row, mode, random.Random(3))


def test_malformed_reply_has_no_calls(bench, rows):
    reply = bench.simulate(rows["simple_0"], "malformed_output", random.Random(0))
    assert reply.tool_calls == () and "```" not in (reply.content or "")


def test_unknown_mode_is_refused(bench, rows):
    with pytest.raises(ValueError, match="unknown BFCL failure mode"):
        bench.simulate(rows["simple_0"], "nope", random.Random(0))


def test_failure_modes_are_well_formed(bench):
    assert bench.failure_modes == FAILURE_MODES
    assert len({m.name for m in FAILURE_MODES}) == len(FAILURE_MODES) >= 4
    for mode in FAILURE_MODES:
        re.compile(mode.feedback_pattern)
        assert 0.1 <= mode.rate <= 0.3 and mode.remedy.endswith(".")
