"""The API-Bank benchmark: next-API-call tasks, bracketed-call scorer with replay check, simulation."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Sequence

from benchmarks.apibank import loader
from benchmarks.apibank.calls import CallParseError, extract_call, format_call, normalize_params, parse_call
from benchmarks.apibank.scoring import Embedder, checkout_problem, score_call
from benchmarks.base import DatasetBenchmark
from core.communication import ReportVocabulary
from core.errors import DataError
from core.models import AgentOutput, Row, Score
from core.simulation import FailureMode, SimReply

PACKAGE_DIR = Path(__file__).resolve().parent

CONTRACT_V1 = "Output contract: end your reply with exactly one bracketed API call: [ApiName(key='value', ...)]."
CONTRACT_V2 = (
    "PROTECTED FINAL OUTPUT CONTRACT (API-Bank). Do not execute APIs. Reply with exactly one bracketed call of the "
    "next API the dialogue needs, keyword arguments only, values copied exactly from the dialogue: "
    "[ApiName(key1='value1', key2='value2')]. The scorer parses the last bracketed call; positional arguments or "
    "bad syntax score 0, the API name must be the expected one, and the call is replayed against the API."
)

FAILURE_MODES = (
    FailureMode("no_call", r"No bracketed API call",
                "End with exactly one bracketed call of the form [ApiName(key='value', ...)].", 0.2),
    FailureMode("wrong_api", r"Wrong API",
                "Call exactly the API the dialogue needs next, named as in the API descriptions or the ToolSearcher "
                "result.", 0.2),
    FailureMode("wrong_arguments", r"Argument mismatch",
                "Copy every argument value exactly from the dialogue (same keys, same spelling and date format).",
                0.25),
    FailureMode("positional_arguments", r"positional arguments",
                "Use keyword arguments only: [ApiName(key='value')], never positional values.", 0.15),
)


def _render_turn(turn: dict[str, Any]) -> str:
    if turn.get("role") == "API":
        call = format_call(str(turn["api_name"]), turn.get("param_dict") or {})
        result = turn.get("result")
        output = result.get("output") if isinstance(result, dict) and "output" in result else result
        return f"API-Request: {call}->{json.dumps(output, ensure_ascii=False, default=str)}"
    return f"{turn.get('role', 'User')}: {turn.get('text', '')}"


class ApiBankBenchmark(DatasetBenchmark):
    name = "apibank"
    package_dir = PACKAGE_DIR
    contracts = {1: CONTRACT_V1, 2: CONTRACT_V2}
    scorer_id = "apibank:protocol:v2"
    executes_tools = True
    report_vocabulary = ReportVocabulary(payload_fields=("api_choice", "call_candidate"),
                                         semi_note="Add no optional tags; keep each section to one sentence; put the "
                                                   "exact API call after [NEXT].")
    answer_format = "one bracketed call [ApiName(key='value', ...)]"
    failure_modes = FAILURE_MODES
    single_step_limit = 1  # section 2.1: API-Bank Single is one model call

    def __init__(self, root: str | None = None, toolsearcher_embedder: Embedder | None = None) -> None:
        self.root = root
        self.toolsearcher_embedder = toolsearcher_embedder

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        return loader.load_rows(ids, data_dir or self.root)

    def render_task(self, row: Row) -> str:
        apis = "\n".join(json.dumps(d, ensure_ascii=False) for d in row.task["api_descriptions"])
        dialogue = "\n".join(_render_turn(t) for t in row.task["dialogue"])
        return (f"Available APIs:\n{apis}\n\nDialogue so far:\n{dialogue}\n\n"
                "Generate the next API request as one bracketed call [ApiName(key='value', ...)].")

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return []

    async def call_tool(self, row: Row, name: str, arguments: dict[str, Any]) -> str:
        return "error: API-Bank offers no tools; answer with one bracketed API call"

    def scorer_problem(self) -> str | None:
        """Why the protocol scorer cannot run here (for a preflight refusal before any rollout), else None."""
        try:
            root: Path | None = loader.resolve_root(self.root)
        except DataError as exc:
            return str(exc)
        return checkout_problem(root)

    def score(self, row: Row, output: AgentOutput) -> Score:
        """protocol-v1 §5.7/§10 API-Bank metric (benchmarks.apibank.scoring); refuses rather than substitutes."""
        try:
            root: Path | None = loader.resolve_root(self.root)
        except DataError:
            root = None
        return score_call(row, output.text, root, self.toolsearcher_embedder)

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        call = extract_call(output.text)
        if call is None:
            return None
        try:
            name, params = parse_call(call)
        except CallParseError:
            return None
        return format_call(name, normalize_params(params), sort=True)

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        gold = row.gold
        if mode is None:
            return SimReply(f"The user's request needs this call next.\n{gold['gold_call']}")
        if mode == "no_call":
            return SimReply(f"I would call {gold['api_name']} with the details the user gave.")
        if mode == "wrong_api":
            names = [d.get("name") for d in row.task.get("api_descriptions", [])]
            others = [n for n in names if n and n != gold["api_name"]]
            other = rng.choice(others) if others else ("ToolSearcher" if gold["api_name"] != "ToolSearcher"
                                                       else "QueryHistoryToday")
            return SimReply(format_call(other, dict(gold["param_dict"])))
        if mode == "wrong_arguments":
            params = dict(gold["param_dict"])
            if params:
                key = sorted(params)[0]
                params[key] = f"{params[key]}-typo"
            else:
                params["unexpected_argument"] = "x"
            return SimReply(format_call(gold["api_name"], params))
        if mode == "positional_arguments":
            values = ", ".join(repr(v) for v in gold["param_dict"].values()) or "'x'"
            return SimReply(f"[{gold['api_name']}({values})]")
        raise ValueError(f"unknown API-Bank failure mode {mode!r}")


BENCHMARK = ApiBankBenchmark()
