"""The API-Bank benchmark: next-API-call tasks, bracketed-call scorer with replay check, simulation."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Sequence

from benchmarks.apibank import loader
from benchmarks.apibank.calls import CallParseError, extract_call, format_call, normalize_params, parse_call
from benchmarks.apibank.replay import checkout_available, replay_check
from core.benchmark import FailureMode, SimReply, Splits
from core.errors import DataError
from core.models import AgentOutput, Row, Score

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


def _values_equal(a: Any, b: Any) -> bool:
    return a == b or str(a).strip() == str(b).strip()


class ApiBankBenchmark:
    name = "apibank"
    answer_format = "one bracketed call [ApiName(key='value', ...)]"
    failure_modes = FAILURE_MODES
    single_step_limit = 1  # section 2.1: API-Bank Single is one model call

    def __init__(self, root: str | None = None) -> None:
        self.root = root

    def _checkout(self) -> Path | None:
        try:
            root = loader.resolve_root(self.root)
        except DataError:
            return None
        return root if checkout_available(root) else None

    def splits(self) -> Splits:
        from benchmarks.splits import load_splits

        return load_splits(self.name, PACKAGE_DIR)

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

    def contract(self, version: int = 1) -> str:
        return CONTRACT_V2 if version == 2 else CONTRACT_V1

    def score(self, row: Row, output: AgentOutput) -> Score:
        gold = row.gold
        call = extract_call(output.text)
        meta: dict[str, Any] = {"gold_call": gold["gold_call"], "predicted_call": call, "check": None}
        if call is None:
            return Score(value=0.0, malformed=True, metadata=meta,
                         feedback=f"No bracketed API call found; expected one call like {gold['gold_call']}.")
        try:
            name, params = parse_call(call)
        except CallParseError as exc:
            detail = ("uses positional arguments; use keyword arguments only" if exc.reason == "positional"
                      else f"could not be parsed ({exc})")
            return Score(value=0.0, metadata={**meta, "parse_error": exc.reason},
                         feedback=f"Unparsable call: {call[:200]} {detail}.")
        params = normalize_params(params)
        if name != gold["api_name"]:
            return Score(value=0.0, metadata=meta,
                         feedback=f"Wrong API: called {name}, expected {gold['api_name']} ({gold['gold_call']}).")
        correct, why, check = self._check(row, name, params)
        meta["check"] = check
        if correct:
            return Score(value=1.0, metadata=meta, feedback=f"Correct: {call} passes the {check} check.")
        return Score(value=0.0, metadata={**meta, "error": why},
                     feedback=f"Argument mismatch: {call[:300]} does not reproduce the expected call "
                              f"{gold['gold_call']} ({check} check: {why}).")

    def _check(self, row: Row, name: str, params: dict[str, Any]) -> tuple[bool, str, str]:
        gold = row.gold
        if name == "ToolSearcher":
            want = " ".join(str(gold["param_dict"].get("keywords", "")).lower().split())
            got = " ".join(str(params.get("keywords", "")).lower().split())
            return got == want, f"keywords {got!r} != {want!r}", "toolsearcher_keywords"
        root = self._checkout()
        if root is not None:
            correct, error = replay_check(root, gold, name, params)
            return correct, error or "API result differs from the expected call's result", "replay"
        expected = gold["param_dict"]
        if set(params) != set(expected):
            return False, f"keys {sorted(params)} != {sorted(expected)}", "argument_match"
        wrong = [k for k in expected if not _values_equal(params[k], expected[k])]
        return not wrong, f"different value(s) for {', '.join(wrong)}", "argument_match"

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


def tools_for(row: Row) -> list[dict[str, Any]]:
    return []


async def call_tool(row: Row, name: str, arguments: dict[str, Any]) -> str:
    return await BENCHMARK.call_tool(row, name, arguments)
