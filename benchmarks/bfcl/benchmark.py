"""`BfclBenchmark`: the core.benchmark.Benchmark of BFCL (four AST categories, protocol-v1 section 10)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Sequence

from benchmarks.base import DatasetBenchmark
from benchmarks.bfcl import data, scoring, simulate, tools
from benchmarks.bfcl.calls import Call, extract_calls, vote_key
from core.communication import ReportVocabulary
from core.models import AgentOutput, Row, Score
from core.simulation import FailureMode, SimReply

PACKAGE_DIR = Path(__file__).resolve().parent

CONTRACT_V1 = "End with one fenced ```json``` block containing a non-empty list of canonical function-call dicts."
CONTRACT_V2 = (
    "Your final answer is the function call(s) that fulfil the request.\n"
    "- If the functions are offered to you as tools, make the call(s) as tool calls: the tool calls of your "
    "first message that makes any are your answer, so make all of them in that one message.\n"
    "- Otherwise end your reply with exactly one fenced ```json``` block holding a non-empty JSON list with one "
    'object per call: [{"function_name": {"argument": value, ...}}, ...]. Each object has exactly one key, the '
    "function's name exactly as listed (dots included); its value is the arguments object.\n"
    "- Use only listed functions and their parameters, give every required parameter, and use the JSON types "
    "the schema declares (numbers unquoted, booleans as true/false, arrays as lists).\n"
    "- When the request asks for several actions, include one call per action in the same list.\n"
    'Example: ```json\n[{"calculate_area": {"base": 10, "height": 5}}]\n```'
)


class BfclBenchmark(DatasetBenchmark):
    name = "bfcl"
    package_dir = PACKAGE_DIR
    contracts = {1: CONTRACT_V1, 2: CONTRACT_V2}
    scorer_id = "bfcl:protocol:v2"
    answer_is_native_call = True  # the tool calls of the first message that makes any are the answer
    prompt_contract_only = frozenset({"decentralized"})  # section 3: Decentralized-BFCL is prompt contract only
    report_vocabulary = ReportVocabulary(semi_tags=("FUNCTION_CHOICE", "ARG_PLAN", "CALL_CANDIDATE"),
                                         payload_fields=("function_choice", "arg_plan", "call_candidate"))
    answer_format = ('function calls: native tool calls, or one fenced json list [{"fn": {"arg": value}}] '
                     "(BFCL AST checker)")
    failure_modes: tuple[FailureMode, ...] = scoring.FAILURE_MODES

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        return data.load_rows(ids, data_dir)

    def render_task(self, row: Row) -> str:
        question = tools.render_question(row.task["question"])
        return f"{question}\n\nAvailable functions:\n{tools.render_functions(row.task['functions'])}"

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return tools.native_tools(row.task["functions"])

    def extract_calls(self, row: Row, output: AgentOutput) -> list[Call] | None:
        return extract_calls(output, row.task["functions"])

    def score(self, row: Row, output: AgentOutput) -> Score:
        return scoring.score(row, output)

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        order_free = row.task["category"] in data.PARALLEL_CATEGORIES
        return vote_key(extract_calls(output, row.task["functions"]), order_free)

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        return simulate.simulate(row, mode, rng)
