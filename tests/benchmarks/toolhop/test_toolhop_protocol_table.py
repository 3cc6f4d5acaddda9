"""ToolHop scorer edge cases, one row per rule of protocol-v1 §5.7 ("ToolHop matcher on final answer, else on
selected agent's last tool result") and §10 ToolHop "Scoring".

Cross-check: every case is also decided by ToolHop's matcher reproduced below as a TEST ORACLE (the rule of
ToolHop's evaluation script as the protocol's reference runners apply it: ast.literal_eval for "parses as a Python
literal"); the engine's scorer must agree with it on every case.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

import pytest

from benchmarks.toolhop import BENCHMARK
from core.models import AgentOutput, Row


def toolhop_matcher(answer_text: str, solution_str: str, prev_tool_content: str = "") -> bool:
    """Oracle: ToolHop's matcher (gold = answer_text, model output = solution_str)."""
    if "<answer>" in solution_str:
        solution_str = solution_str.split("<answer>")[-1]
    if "</answer>" in solution_str:
        solution_str = solution_str.split("</answer>")[0]
    try:
        ground_truth = ast.literal_eval(answer_text.strip())
    except Exception:
        if str(answer_text).removesuffix(".0").lower() in (
            str(solution_str).removesuffix(".0").replace(",", "").lower()
        ):
            return True
    else:
        try:
            solution = ast.literal_eval(solution_str.strip())
        except Exception:
            pass
        else:
            if ground_truth == solution:
                return True
    return bool(
        prev_tool_content
        and answer_text.removesuffix(".0").lower() in prev_tool_content.removesuffix(".0").replace(",", "").lower()
    )


TAG = "protocol-v1 §10 ToolHop: text after last <answer>"
LIT = "protocol-v1 §10 ToolHop: if gold parses as a Python literal, literal equality"
SUB = ("protocol-v1 §10 ToolHop: else gold (lowercased) substring of answer (lowercased, commas removed), "
       "trailing '.0' dropped")
TOOL = "protocol-v1 §10 ToolHop: also correct if gold appears in the last tool result before the final message"
METRIC = "protocol-v1 §5.7 toolhop: ToolHop matcher on final answer"


class Case(NamedTuple):
    text: str | None
    gold: str
    tool: str | None
    value: float
    cite: str


TABLE = [
    Case("<answer>1976</answer>", "1976", None, 1.0, LIT),
    Case("<answer>1976.0</answer>", "1976", None, 1.0, LIT + " (1976.0 == 1976)"),
    Case("<answer>1,976</answer>", "1976", None, 0.0, LIT + " (numbers with separators: '1,976' is (1, 976))"),
    Case("<answer>1976 AD</answer>", "1976", None, 0.0, LIT + " (no substring rule for a literal gold)"),
    Case("<answer>[1, 2]</answer>", "[1,2]", None, 1.0, LIT + " (lists)"),
    Case("<answer>none</answer>", "None", None, 0.0, LIT + " ('none' is not the literal None)"),
    Case("<answer>None</answer>", "None", None, 1.0, LIT),
    Case("<answer>Paris, France</answer>", "Paris", None, 1.0, SUB),
    Case("<answer>ParIS</answer>", "paris", None, 1.0, SUB + " (case-insensitive)"),
    Case("<answer>Lyon</answer>", "Paris", None, 0.0, SUB),
    Case("<answer>version 2</answer>", "Version 2.0", None, 1.0, SUB + " (gold's trailing '.0' dropped)"),
    Case("<answer>1,234 km</answer>", "1,234 km", None, 0.0, SUB + " (commas are removed from the answer only)"),
    Case("<answer>1990-05-12</answer>", "1990-05-12", None, 1.0, SUB + " (a date is not a literal)"),
    Case("<answer>unknown</answer>", "unknown", None, 1.0, SUB + " (no 'give up' rule: an answer is an answer)"),
    Case("<answer>I don't know</answer>", "no", None, 1.0, SUB + " (the matcher has no refusal rule)"),
    Case("<answer>a</answer> then <answer>Paris</answer>", "Paris", None, 1.0, TAG + " (the LAST tag)"),
    Case("<answer>Paris</answer> or maybe Lyon", "Lyon", None, 0.0, TAG + " (cut at </answer>)"),
    Case("<answer>open ended Paris", "Paris", None, 1.0, TAG + " (no closing tag: to the end)"),
    Case("I am sure it is Paris.", "Paris", None, 1.0, TAG + " (no tag: the matcher reads the whole message)"),
    Case("<ANSWER>Rome</ANSWER> Lyon", "Lyon", None, 1.0, TAG + " (tags are matched as written, lower case)"),
    Case("<answer>Lyon</answer>", "Paris", '"Paris"', 1.0, TOOL),
    Case("<answer>1977</answer>", "1976", "born in 1,976", 1.0, TOOL + " (commas removed from the tool result)"),
    Case("<answer>Lyon</answer>", "Paris", "", 0.0, TOOL + " (an empty tool result matches nothing)"),
    Case("", "Paris", None, 0.0, METRIC + " (empty reply)"),
    Case(None, "1976", "no result", 0.0, METRIC + " (no reply, tool result without the gold)"),
]


def _row(gold: str) -> Row:
    return Row(id="0", dataset="toolhop", task={"question": "q", "tools": [], "functions": []},
               gold={"answer": gold})


def test_table_is_large_enough_and_cited():
    assert len(TABLE) >= 15
    assert all(case.cite.startswith("protocol-v1 §") for case in TABLE)


@pytest.mark.parametrize("case", TABLE, ids=[f"{i}:{(c.text or '')[:30]!r}" for i, c in enumerate(TABLE)])
def test_toolhop_protocol_case(case: Case):
    metadata = {} if case.tool is None else {"last_tool_result": case.tool}
    score = BENCHMARK.score(_row(case.gold), AgentOutput(text=case.text, metadata=metadata))
    assert score.value == case.value, case.cite
    assert score.value == float(toolhop_matcher(case.gold, case.text or "", case.tool or "")), case.cite
    assert score.malformed == ("<answer>" not in (case.text or ""))


from hypothesis import given, settings, strategies as st  # noqa: E402

_PIECES = st.sampled_from(["<answer>", "</answer>", "1", "9", ".0", ",", " ", "Paris", "paris", "[", "]", "'",
                           "None", "-", "x", "\n"])
_TEXT = st.lists(_PIECES, max_size=8).map("".join)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(_TEXT, _TEXT, st.one_of(st.none(), _TEXT))
def test_scorer_equals_toolhop_matcher_on_random_text(text, gold, tool):
    """protocol-v1 §5.7 toolhop: the scorer IS ToolHop's matcher (random answers, golds and tool results)."""
    metadata = {} if tool is None else {"last_tool_result": tool}
    score = BENCHMARK.score(_row(gold), AgentOutput(text=text, metadata=metadata))
    assert score.value == float(toolhop_matcher(gold, text, tool or ""))
