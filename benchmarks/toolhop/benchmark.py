"""The ToolHop benchmark: loader, ToolHop matcher, the row's own tools (restricted execution), simulation."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Sequence

from benchmarks.base import DatasetBenchmark
from benchmarks.toolhop import executor, loader
from benchmarks.toolhop.scoring import GIVE_UP, extract_final, matches, normalize, score_answer
from core.communication import ReportVocabulary
from core.models import AgentOutput, Row, Score
from core.simulation import FailureMode, SimReply

PACKAGE_DIR = Path(__file__).resolve().parent
MAX_TURNS = 9
ANSWER_REQUEST = "Give your final answer now, only the value, wrapped as <answer>VALUE</answer>."

FORMAT_NOTE = ("Use the tools to answer. Formats: dates as YYYY-MM-DD, people as Firstname Lastname, numbers as "
               "digits without leading zeros.")
CONTRACT_V1 = "Output contract: end your reply with the final answer wrapped as <answer>VALUE</answer>."
CONTRACT_V2 = (
    "PROTECTED FINAL OUTPUT CONTRACT (ToolHop). When you have the result of the last hop, reply with exactly one "
    "<answer>VALUE</answer> holding only the value (date YYYY-MM-DD, Firstname Lastname, digits without leading "
    "zeros; no units, no sentence). The scorer reads the text after the last <answer>; a reply without it scores "
    "0 unless the last tool result already contains the answer."
)

FAILURE_MODES = (
    FailureMode("missing_answer_tag", r"No <answer> tag found",
                "Always finish with the final value wrapped as <answer>VALUE</answer>.", 0.2),
    FailureMode("wrong_answer", r"does not match the gold answer",
                "Call a tool for every hop and answer with the value the last tool call returned.", 0.25),
    FailureMode("gives_up", r"Empty or 'unknown' answer",
                "Never answer 'unknown': keep calling the tools until each hop is resolved, then give the value.",
                0.15),
)


class ToolHopBenchmark(DatasetBenchmark):
    name = "toolhop"
    package_dir = PACKAGE_DIR
    contracts = {1: CONTRACT_V1, 2: CONTRACT_V2}
    scorer_id = "toolhop:protocol:v2"
    executes_tools = True
    report_vocabulary = ReportVocabulary(semi_tags=("TOOL_CHAIN", "OBSERVATIONS", "ANSWER_CANDIDATE"),
                                         payload_fields=("tool_chain", "observations", "answer_candidate"))
    answer_format = "<answer>VALUE</answer>"
    runs_model_code = True  # dataset tool code, in the sandbox jail
    failure_modes = FAILURE_MODES
    single_step_limit = MAX_TURNS  # section 2.1: plain tool loop, 9 turns
    answer_marker = "<answer>"
    answer_request = ANSWER_REQUEST  # section 10: one extra short call when no <answer> tag

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        return loader.load_rows(ids, data_dir)

    def render_task(self, row: Row) -> str:
        return f"{row.task['question']}\n\n{FORMAT_NOTE}"

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return [dict(schema) for schema in row.task["tools"]]

    async def call_tool(self, row: Row, name: str, arguments: dict[str, Any]) -> str:
        """Run the row's tool `name` (runtime name from native_tools) in the restricted child process.

        Raises executor.DatasetExecDisabled (a UsageError) unless TOOLHOP_ALLOW_DATASET_EXEC=1; every tool
        failure comes back as 'error: ...' text cut to the result budget."""
        executor.require_exec_allowed()
        entry = row.gold.get("tool_index", {}).get(name)
        if entry is None:
            return executor.format_result(f"error: unknown tool {name!r}; available: "
                                          f"{', '.join(row.gold.get('tool_index', {}))}")
        if not isinstance(arguments, dict):
            return "error: tool arguments must be a JSON object"
        return await executor.run_tool(row.gold["functions"], entry["name"], arguments, index=entry["index"])

    def score(self, row: Row, output: AgentOutput) -> Score:
        last = output.metadata.get("last_tool_result")
        return score_answer(output.text, str(row.gold["answer"]), None if last is None else str(last))

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        answer = extract_final(output.text)
        if answer is None or answer.lower().strip(" .") in GIVE_UP:
            return None
        return normalize(answer).rstrip(".").strip() or None

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        gold = str(row.gold["answer"])
        if mode is None:
            return SimReply(f"The last tool call settles the final hop.\n<answer>{gold}</answer>")
        if mode == "missing_answer_tag":
            return SimReply("I followed the chain of tools and found the final value in the last step.")
        if mode == "wrong_answer":
            return SimReply(f"<answer>{self._wrong_answer(gold, rng)}</answer>")
        if mode == "gives_up":
            return SimReply("The tools did not return enough information.\n<answer>unknown</answer>")
        raise ValueError(f"unknown ToolHop failure mode {mode!r}")

    @staticmethod
    def _wrong_answer(gold: str, rng: random.Random) -> str:
        candidates = []
        digits = "".join(ch for ch in gold if ch.isdigit())
        if digits:
            candidates.append(str(int(digits) + rng.randint(1, 9)))
        candidates += ["Jane Placeholder", "1066-10-14", "Qwxz"]
        for candidate in candidates:
            if not matches(candidate, gold):
                return candidate
        return "zzzz-no-match-qqqq"


BENCHMARK = ToolHopBenchmark()
