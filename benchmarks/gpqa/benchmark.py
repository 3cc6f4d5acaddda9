"""The GPQA-Diamond benchmark: loader, letter scorer, calculator tool, simulation."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Sequence

from benchmarks.base import DatasetBenchmark
from benchmarks.gpqa import loader
from benchmarks.gpqa.scoring import extract_letter, score_letter
from benchmarks.math.calculator import CALCULATOR_SCHEMA, call_calculator
from core.models import AgentOutput, Row, Score
from core.simulation import FailureMode, SimReply

PACKAGE_DIR = Path(__file__).resolve().parent

CONTRACT_V1 = "Output contract: end your reply with exactly one final line 'Answer: X', where X is A, B, C or D."
CONTRACT_V2 = (
    "PROTECTED FINAL OUTPUT CONTRACT (GPQA). The last line of your reply must be exactly 'Answer: X' where X is "
    "one single option letter A, B, C or D (no option text, no parentheses, no second letter). Reason briefly "
    "before it if needed. The scorer reads the option letter from that line; a reply without it scores 0."
)

FAILURE_MODES = (
    FailureMode("wrong_option", r"Wrong option",
                "Before answering, check each option against every constraint in the question and eliminate the "
                "ones that violate one.", 0.25),
    FailureMode("missing_answer_line", r"No answer letter found",
                "Always finish with a final line 'Answer: X' where X is A, B, C or D.", 0.2),
    FailureMode("answer_without_letter", r"Answer line without option letter",
                "On the 'Answer:' line write only the option letter, never the option's text.", 0.15),
)


class GpqaBenchmark(DatasetBenchmark):
    name = "gpqa"
    package_dir = PACKAGE_DIR
    contracts = {1: CONTRACT_V1, 2: CONTRACT_V2}
    scorer_id = "gpqa:protocol:v3"
    executes_tools = True
    answer_format = "a final line 'Answer: X' with X in A-D"
    failure_modes = FAILURE_MODES
    independent_wall_clock_s = 120.0  # section 2.2: per-row wall-clock cap of an Independent replica

    def __init__(self, shuffle_seed: int = 0) -> None:
        self.shuffle_seed = shuffle_seed

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        return loader.load_rows(ids, data_dir, self.shuffle_seed)

    def render_task(self, row: Row) -> str:
        options = row.task["options"]
        body = "\n".join(f"{letter}) {text}" for letter, text in zip(loader.LETTERS, options))
        return f"{row.task['question']}\n\n{body}"

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return [CALCULATOR_SCHEMA]

    async def call_tool(self, row: Row, name: str, arguments: dict[str, Any]) -> str:
        return await call_calculator(name, arguments)

    def score(self, row: Row, output: AgentOutput) -> Score:
        return score_letter(output.text, str(row.gold["correct_letter"]))

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        return extract_letter(output.text)

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        gold = str(row.gold["correct_letter"])
        if mode is None:
            return SimReply(f"Comparing the options against the constraints leaves one consistent choice.\nAnswer: {gold}")
        if mode == "wrong_option":
            wrong = rng.choice([letter for letter in loader.LETTERS if letter != gold])
            return SimReply(f"The second constraint seems to favour this one.\nAnswer: {wrong}")
        if mode == "missing_answer_line":
            return SimReply("The reasoning points to the option whose value matches the derived quantity.")
        if mode == "answer_without_letter":
            return SimReply("Answer: the option with the largest value")
        raise ValueError(f"unknown GPQA failure mode {mode!r}")


BENCHMARK = GpqaBenchmark()
