"""A self-contained sum benchmark for bench scripts (bench/ never imports tests/): rows ask for a sum, the simulated
endpoint answers right unless one of its failure modes fires; scored by the last 'Answer: <n>' line."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from core.benchmark import BenchmarkDefaults, Splits
from core.simulation import FailureMode, SimReply
from core.models import AgentOutput, Row, Score

ANSWER = re.compile(r"Answer:\s*(-?\d+)")


class SumBench(BenchmarkDefaults):
    name = "gpqa"  # the gpqa team specs apply (roles per topology); the rows are sums
    scorer_id = "sum:protocol:v1"
    answer_format = "a line 'Answer: <integer>'"
    failure_modes = (
        FailureMode("arithmetic", r"arithmetic", "Double-check the arithmetic before answering.", 0.3),
        FailureMode("format", r"format", "End with a line of the form Answer: <integer>.", 0.2),
    )

    def __init__(self, n_train: int = 150, n_validation: int = 50, n_test: int = 100):
        ids = [f"s{i}" for i in range(n_train + n_validation + n_test)]
        self._splits = Splits(dataset="sum", train=tuple(ids[:n_train]),
                              validation=tuple(ids[n_train:n_train + n_validation]),
                              test=tuple(ids[n_train + n_validation:]), eval_ids=tuple(ids[n_train + n_validation:]))
        self._rows = {i: Row(id=i, dataset="sum", task={"question": f"Item {i}: what is {k} + {k * 5 % 17}?"},
                             gold={"answer": k + k * 5 % 17}) for k, i in enumerate(ids)}

    @property
    def rows(self) -> dict[str, Row]:
        return self._rows

    def splits(self) -> Splits:
        return self._splits

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        return [self._rows[i] for i in ids]

    def render_task(self, row: Row) -> str:
        return str(row.task["question"])

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return []

    def contract(self, version: int = 1) -> str:
        return "Your final line must be 'Answer: <integer>'."

    def score(self, row: Row, output: AgentOutput) -> Score:
        found = ANSWER.findall(output.text or "")
        if not found:
            return Score(value=0.0, feedback="No 'Answer:' line found (format).", malformed=True)
        if int(found[-1]) != row.gold["answer"]:
            return Score(value=0.0, feedback=f"Wrong result {found[-1]} (arithmetic error).")
        return Score(value=1.0, feedback="Correct.")

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        found = ANSWER.findall(output.text or "")
        return found[-1] if found else None

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        gold = row.gold["answer"]
        if mode is None:
            return SimReply(content=f"Adding the numbers.\nAnswer: {gold}")
        if mode == "arithmetic":
            return SimReply(content=f"Adding the numbers.\nAnswer: {gold + rng.randint(1, 3)}")
        return SimReply(content=f"The sum is {gold}.")
