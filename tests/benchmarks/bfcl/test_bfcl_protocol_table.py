"""BFCL scorer edge cases, one row per rule of protocol-v1 §5.7 bfcl ("bfcl_eval AST checker") and §10 BFCL
("native tool calling ... answer = tool calls of the first model message that has any. Sequential/Centralized/
Decentralized: contract JSON list in the last fenced block that is a list of objects. Scoring: bfcl_eval
ast_checker ...; MODEL_ID registered so dotted names (math.factorial) are checked as written").

Cross-check on every case: the official pipeline itself -- bfcl_eval's format gate
(utils.is_function_calling_format_output, loaded from the installed bfcl_eval source) followed by bfcl_eval's
ast_checker -- applied to the call list exactly as the answer wrote it. The engine's verdict must equal it.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from benchmarks.bfcl import BENCHMARK
from benchmarks.bfcl.checker import run_ast_checker
from benchmarks.bfcl.data import checker_category
from benchmarks.bfcl.tools import original_names
from core.models import AgentOutput
from tests.benchmarks.bfcl.helpers import requires_checker

pytestmark = requires_checker


def _official_format_gate():
    """bfcl_eval.utils.is_function_calling_format_output, compiled from the installed bfcl_eval source (the module
    itself imports optional dependencies the AST path does not need)."""
    import bfcl_eval

    source = (Path(bfcl_eval.__file__).parent / "utils.py").read_text()
    node = next(n for n in ast.parse(source).body
                if isinstance(n, ast.FunctionDef) and n.name == "is_function_calling_format_output")
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "bfcl_eval/utils.py", "exec"), namespace)
    return namespace["is_function_calling_format_output"]


def official_verdict(row, calls: Any) -> bool:
    if calls is None or not _official_format_gate()(calls):
        return False
    try:
        result = run_ast_checker(row.task["functions"], calls, row.gold["ground_truth"],
                                 checker_category(row.task["category"]))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return False
    return bool(result["valid"])


def fenced(calls: Any) -> str:
    return f"Here are the calls.\n```json\n{json.dumps(calls)}\n```"


TXT = "protocol-v1 §10 BFCL: contract JSON list in the last fenced block that is a list of objects"
NAT = "protocol-v1 §10 BFCL: answer = tool calls of the first model message that has any"
CHK = "protocol-v1 §5.7 bfcl: bfcl_eval AST checker"
DOT = "protocol-v1 §10 BFCL: MODEL_ID registered so dotted names (math.factorial) are checked as written"
PAR = "protocol-v1 §10 BFCL: order-free for parallel"


class Case(NamedTuple):
    row: str
    text: str | None
    tool_calls: tuple[dict[str, Any], ...]
    value: float
    cite: str
    as_written: Any = None  # the call list the checker must see; None = parsed from the fenced block / tool calls


TABLE = [
    Case("simple_0", fenced([{"math.factorial": {"number": 7}}]), (), 1.0, CHK),
    Case("simple_0", fenced([{"math_factorial": {"number": 7}}]), (), 0.0, DOT + " (text names are not rewritten)"),
    Case("simple_0", fenced([{"name": "math.factorial", "arguments": {"number": 7}}]), (), 0.0,
         TXT + " (a non-canonical call shape is handed on as written, not rewritten)"),
    Case("simple_0", fenced([{"function": "math.factorial", "args": {"number": 7}}]), (), 0.0,
         TXT + " (no call shape is rewritten)"),
    Case("simple_0", fenced([{"math.factorial": {"number": "7"}}]), (), 0.0, CHK + " (type in possible answers)"),
    Case("simple_0", fenced([{"math.factorial": {}}]), (), 0.0, CHK + " (required params)"),
    Case("simple_0", fenced([{"math.factorial": {"number": 7, "base": 2}}]), (), 0.0, CHK + " (unexpected param)"),
    Case("simple_0", fenced([{"math.factorial": {"number": 7}}, {"math.factorial": {"number": 7}}]), (), 0.0,
         CHK + " (simple: exactly one call)"),
    Case("simple_0", fenced([{"math.factorial": 7}]), (), 0.0, CHK + " (BFCL's format gate: arguments must be an object)"),
    Case("simple_0", "draft\n```json\n[{\"math.factorial\": {\"number\": 6}}]\n```\nfinal\n"
         "```json\n[{\"math.factorial\": {\"number\": 7}}]\n```\nTERMINATE", (), 1.0, TXT + " (the LAST fenced list)"),
    Case("simple_0", "```json\n[{\"math.factorial\": {\"number\": 7}}]\n```\n```\nnot json\n```", (), 1.0,
         TXT + " (a later block that is not a list of objects is skipped)"),
    Case("simple_0", '[{"math.factorial": {"number": 7}}]', (), 0.0, TXT + " (an unfenced list is not the contract)"),
    Case("simple_0", "```json\n[]\n```", (), 0.0, TXT + " (an empty list holds no call)"),
    Case("simple_0", None, ({"name": "math_factorial", "arguments": '{"number": 7}'},), 1.0,
         NAT + " (native tool names map back to the offered BFCL name)", [{"math.factorial": {"number": 7}}]),
    Case("simple_0", None, ({"type": "function", "function": {"name": "math_factorial",
                                                               "arguments": {"number": 8}}},), 0.0,
         NAT + " (wrapped OpenAI shape; wrong value)", [{"math.factorial": {"number": 8}}]),
    Case("simple_0", None, ({"name": "math_factorial", "arguments": "{not json"},), 0.0,
         NAT + " (arguments that are not JSON: no call)"),
    Case("simple_0", fenced([{"other": {}}]), ({"name": "math_factorial", "arguments": '{"number": 7}'},), 1.0,
         NAT + " (native calls are the answer; the text is not read)", [{"math.factorial": {"number": 7}}]),
    Case("simple_1", fenced([{"convert_temperature": {"value": 30.0, "from_unit": "C", "to_unit": "F",
                                                      "precision": 1}}]), (), 1.0, CHK + " (any possible answer)"),
    Case("simple_1", fenced([{"convert_temperature": {"value": 30.0, "from_unit": "celsius",
                                                      "to_unit": "fahrenheit", "precision": 1}}]), (), 1.0,
         CHK + " (the checker's own string standardisation)"),
    Case("parallel_0", fenced([{"music.play": {"song": "Yellow", "artist": "Coldplay", "minutes": 5}},
                               {"music.play": {"song": "Halo", "artist": "Beyonce", "minutes": 10}}]), (), 1.0, PAR),
    Case("parallel_0", fenced([{"music.play": {"song": "Halo", "artist": "Beyonce", "minutes": 10}}]), (), 0.0,
         PAR + " (every expected call is needed)"),
    Case("multiple_0", fenced([{"restaurant.book": {"name": "Luigi's", "party_size": 4, "time": "19:00"}}]), (), 1.0,
         CHK + " (an optional parameter may be omitted)"),
    Case("multiple_0", fenced([{"restaurant.search": {"name": "Luigi's"}}]), (), 0.0,
         CHK + " (multiple: the right function among several)"),
    Case("parallel_multiple_0", fenced([{"currency.convert": {"amount": 100.0, "from_currency": "USD",
                                                              "to_currency": "EUR"}},
                                        {"stock.price": {"ticker": "AAPL"}}]), (), 1.0, PAR),
]


@pytest.fixture(scope="module")
def table_rows():
    from tests.benchmarks.bfcl.helpers import FIXTURE_IDS, FIXTURES

    return {row.id: row for row in BENCHMARK.load_rows(list(FIXTURE_IDS), data_dir=str(FIXTURES))}


def test_table_is_large_enough_and_cited():
    assert len(TABLE) >= 15
    assert all(case.cite.startswith("protocol-v1 §") for case in TABLE)


def _written(case: Case, row) -> Any:
    if case.as_written is not None:
        return case.as_written
    if case.tool_calls:
        return None  # unparsable native arguments
    text = case.text or ""
    blocks = [b for b in text.split("```")[1::2]]
    for block in reversed(blocks):
        body = block.split("\n", 1)[1] if "\n" in block else block
        try:
            parsed = json.loads(body)
        except ValueError:
            continue
        if isinstance(parsed, list) and parsed and all(isinstance(x, dict) for x in parsed):
            return parsed
    return None


@pytest.mark.parametrize("case", TABLE, ids=[f"{i}:{c.row}" for i, c in enumerate(TABLE)])
def test_bfcl_protocol_case(case: Case, table_rows):
    row = table_rows[case.row]
    score = BENCHMARK.score(row, AgentOutput(text=case.text, tool_calls=case.tool_calls))
    assert score.value == case.value, (case.cite, score.feedback)
    assert score.value == float(official_verdict(row, _written(case, row))), case.cite
    assert score.metadata["checker"] == "bfcl_eval.ast_checker"


def test_native_names_map_back_only_to_offered_functions(table_rows):
    """protocol-v1 §10 BFCL: each schema becomes a tool; its name maps back to the BFCL name, nothing else does."""
    names = original_names(table_rows["simple_0"].task["functions"])
    assert names == {"math_factorial": "math.factorial"}
