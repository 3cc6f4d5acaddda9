"""A small in-memory benchmark for engine tests (the real datasets have their own test suites).

Rows ask for a sum; the simulated endpoint answers right unless a failure mode fires (see engine.sim.policy).
"""

from __future__ import annotations

import random
import re
from typing import Any, Sequence

from core.benchmark import BenchmarkDefaults, Splits
from core.errors import DataError
from core.models import AgentOutput, Row, Score
from core.simulation import FailureMode, SimReply

ANSWER_RE = re.compile(r"Answer:\s*(-?\d+)")


class FakeBench(BenchmarkDefaults):
    name = "fake"
    scorer_id = "fake:protocol:v1"
    answer_format = "a line 'Answer: <integer>'"
    failure_modes = (
        FailureMode("arithmetic", r"arithmetic", "Double-check the arithmetic before answering.", 0.3),
        FailureMode("format", r"format", "End with a line of the form Answer: <integer>.", 0.2),
    )

    def __init__(self, n_train: int = 12, n_validation: int = 10, n_test: int = 16):
        ids = [f"q{i}" for i in range(n_train + n_validation + n_test)]
        self._splits = Splits(dataset="fake", train=tuple(ids[:n_train]),
                              validation=tuple(ids[n_train:n_train + n_validation]),
                              test=tuple(ids[n_train + n_validation:]), eval_ids=tuple(ids[n_train + n_validation:]))
        self._rows = {i: Row(id=i, dataset="fake", task={"question": f"Question {i}: what is {k} + {k * 7 % 13}?"},
                             gold={"answer": k + k * 7 % 13}) for k, i in enumerate(ids)}
        self.loads: list[list[str]] = []

    def splits(self) -> Splits:
        return self._splits

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        missing = [i for i in ids if i not in self._rows]
        if missing:
            raise DataError(f"fake data lacks IDs {missing}")
        self.loads.append(list(ids))
        return [self._rows[i] for i in ids]

    def render_task(self, row: Row) -> str:
        return row.task["question"]

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return []

    def contract(self, version: int = 1) -> str:
        return "Your final line must be 'Answer: <integer>'."

    def score(self, row: Row, output: AgentOutput) -> Score:
        match = ANSWER_RE.findall(output.text or "")
        if not match:
            return Score(value=0.0, feedback="No 'Answer:' line found (format).", malformed=True)
        if int(match[-1]) != row.gold["answer"]:
            return Score(value=0.0, feedback=f"Wrong result {match[-1]} (arithmetic error).")
        return Score(value=1.0, feedback="Correct.")

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        match = ANSWER_RE.findall(output.text or "")
        return match[-1] if match else None

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        gold = row.gold["answer"]
        if mode is None:
            return SimReply(content=f"Adding the numbers.\nAnswer: {gold}")
        if mode == "arithmetic":
            return SimReply(content=f"Adding the numbers.\nAnswer: {gold + rng.randint(1, 3)}")
        return SimReply(content=f"The sum is {gold}.")
