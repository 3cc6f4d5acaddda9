"""The MATH (Precalculus Level 5) benchmark: loader, Hendrycks-equivalence scorer, calculator tool, simulation."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any, Sequence

from benchmarks.base import DatasetBenchmark
from benchmarks.math import loader
from benchmarks.math.calculator import CALCULATOR_SCHEMA, call_calculator
from benchmarks.math.equivalence import is_equiv, last_boxed, strip_string
from core.models import AgentOutput, Row, Score
from core.simulation import FailureMode, SimReply

PACKAGE_DIR = Path(__file__).resolve().parent
_DECIMAL = re.compile(r"-?\d*\.\d+")

CONTRACT_V1 = (
    "Output contract: put the final answer in \\boxed{...} on the FIRST line, then at most 12 short reasoning "
    "lines, then the same \\boxed{...} line again as the LAST line. The scorer reads only the last \\boxed{}."
)
CONTRACT_V2 = (
    "PROTECTED FINAL OUTPUT CONTRACT (MATH). Your reply must start with a line containing only the final answer "
    "in \\boxed{...} and must end with the same \\boxed{...} line. Between them write at most 12 short reasoning "
    "lines. Box exactly one final answer, in simplest exact form (fractions, radicals, multiples of \\pi; no "
    "decimal approximations, no units, no words inside the box). The scorer extracts the last \\boxed{} and "
    "compares it with the gold answer by Hendrycks MATH equivalence; a reply without \\boxed{} scores 0."
)

FORMAT_NOTE = ("box only the final answer in simplest exact form (no decimals, units or words inside "
               "\\boxed{}); the \\boxed{} line comes first and last.")

FAILURE_MODES = (
    FailureMode("unboxed_answer", r"No \\boxed\{\} answer found",
                "Always end with the final answer inside \\boxed{...} on the last line.", 0.2),
    FailureMode("wrong_value", r"^Wrong answer",
                "Verify the result (substitute back, or check it with the calculator) before boxing it.", 0.25),
    FailureMode("decimal_approximation", r"Decimal approximation",
                "Give the exact answer (fractions, radicals, multiples of pi), never a decimal approximation.", 0.15),
)


def score_text(text: str | None, gold: str) -> Score:
    predicted = last_boxed(text)
    if predicted is None:
        lead = "Empty reply" if not (text or "").strip() else "Unboxed reply"
        return Score(value=0.0, malformed=True, metadata={"predicted": None, "gold": gold},
                     feedback=f"{lead}: No \\boxed{{}} answer found; the final answer must be inside \\boxed{{...}} "
                              "on the last line.")
    meta: dict[str, Any] = {"predicted": predicted, "gold": gold}
    if is_equiv(predicted, gold):
        return Score(value=1.0, metadata=meta, feedback=f"Correct: boxed '{predicted}' is equivalent to the gold answer.")
    if _DECIMAL.fullmatch(strip_string(predicted)) and not _DECIMAL.fullmatch(strip_string(gold)):
        return Score(value=0.0, metadata=meta,
                     feedback=f"Decimal approximation: boxed '{predicted}' is not the exact gold answer '{gold}'; give "
                              "the exact form (fraction, radical, multiple of pi).")
    return Score(value=0.0, metadata=meta,
                 feedback=f"Wrong answer: boxed '{predicted}' is not equivalent to the gold answer '{gold}'.")


class MathBenchmark(DatasetBenchmark):
    name = "math"
    package_dir = PACKAGE_DIR
    contracts = {1: CONTRACT_V1, 2: CONTRACT_V2}
    scorer_id = "math:protocol:v3"
    executes_tools = True
    answer_format = "the final answer in \\boxed{...} (first and last line)"
    failure_modes = FAILURE_MODES
    independent_wall_clock_s = 120.0  # section 2.2: per-row wall-clock cap of an Independent replica
    format_note = FORMAT_NOTE  # section 2.1: MATH adds a short format note

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        return loader.load_rows(ids, data_dir)

    def render_task(self, row: Row) -> str:
        return str(row.task["problem"])

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return [CALCULATOR_SCHEMA]

    async def call_tool(self, row: Row, name: str, arguments: dict[str, Any]) -> str:
        return await call_calculator(name, arguments)

    def score(self, row: Row, output: AgentOutput) -> Score:
        return score_text(output.text, str(row.gold["answer"]))

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        predicted = last_boxed(output.text)
        if predicted is None:
            return None
        try:
            return strip_string(predicted)
        except Exception:
            return predicted.strip()

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        gold = str(row.gold["answer"])
        if mode is None:
            return SimReply(f"\\boxed{{{gold}}}\nWork through the identities step by step.\n\\boxed{{{gold}}}")
        if mode == "unboxed_answer":
            return SimReply(f"Working through the identities, the final answer is {gold}.")
        if mode == "wrong_value":
            for wrong in (f"{gold}+1", f"2({gold})+3", "\\frac{7}{13}"):
                if not is_equiv(wrong, gold):
                    return SimReply(f"\\boxed{{{wrong}}}\nA sign slipped in the second step.\n\\boxed{{{wrong}}}")
        if mode == "decimal_approximation":
            while True:
                wrong = f"{rng.uniform(0.1, 9.9):.4f}"
                if not is_equiv(wrong, gold):
                    return SimReply(f"\\boxed{{{wrong}}}\nNumerically evaluated.\n\\boxed{{{wrong}}}")
        raise ValueError(f"unknown MATH failure mode {mode!r}")


BENCHMARK = MathBenchmark()
