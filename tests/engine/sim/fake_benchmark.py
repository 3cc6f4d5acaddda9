"""A tiny arithmetic Benchmark for the simulated-endpoint tests (satisfies core.benchmark.Benchmark)."""

from __future__ import annotations

import random
import re
from typing import Any, Sequence

from core.benchmark import BenchmarkDefaults, Splits
from core.errors import DataError
from core.models import AgentOutput, Row, Score
from core.simulation import FailureMode, SimReply

FORMAT = FailureMode("format", r"missing the 'Answer:' line", "Always finish with a line 'Answer: <number>'.", 0.5)
ARITH = FailureMode("arithmetic", r"arithmetic slip", "Double-check every arithmetic step before answering.", 0.4)
TOOL = FailureMode("no_tool", r"did not call the calculator", "Call the calculator tool for every computation.", 0.3)

_PROBLEMS = [("r1", 2, 3), ("r2", 7, 5), ("r3", 11, 4), ("r4", 6, 9), ("r5", 13, 8), ("t1", 21, 34)]
CONTRACT = "PROTECTED FINAL OUTPUT CONTRACT: end with 'Answer: <number>'."
CALCULATOR = {"type": "function", "function": {"name": "calculator", "description": "evaluate an expression",
                                               "parameters": {"type": "object",
                                                              "properties": {"expression": {"type": "string"}},
                                                              "required": ["expression"]}}}


class ArithBenchmark(BenchmarkDefaults):
    name = "arith"
    scorer_id = "arith:protocol:v1"
    answer_format = "Answer: <number>"
    failure_modes = (FORMAT, ARITH, TOOL)

    def __init__(self) -> None:
        self._rows = {pid: Row(id=pid, dataset=self.name, task={"a": a, "b": b, "tool": pid.startswith("t")},
                               gold={"answer": a + b}) for pid, a, b in _PROBLEMS}

    def splits(self) -> Splits:
        return Splits(self.name, train=("r1", "r2"), validation=("r3", "r4"), test=("r5", "t1"),
                      eval_ids=("r1", "r2", "r3", "r4", "r5", "t1"))

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        missing = [i for i in ids if i not in self._rows]
        if missing:
            raise DataError(f"unknown ids {missing}")
        return [self._rows[i] for i in ids]

    def render_task(self, row: Row) -> str:
        return f"Compute {row.task['a']} + {row.task['b']}."

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return [CALCULATOR] if row.task["tool"] else []

    def contract(self, version: int = 1) -> str:
        return CONTRACT

    def score(self, row: Row, output: AgentOutput) -> Score:
        found = re.findall(r"Answer:\s*(-?\d+)", output.text or "")
        if not found:
            return Score(value=0.0, feedback="The reply is missing the 'Answer:' line.", malformed=True)
        if int(found[-1]) != row.gold["answer"]:
            return Score(value=0.0, feedback="Wrong total: an arithmetic slip.")
        return Score(value=1.0, feedback="Correct.")

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        found = re.findall(r"Answer:\s*(-?\d+)", output.text or "")
        return found[-1] if found else None

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        gold = row.gold["answer"]
        if mode is None and row.task["tool"]:
            return SimReply(content=None, tool_calls=({"name": "calculator",
                                                      "arguments": {"expression": f"{row.task['a']}+{row.task['b']}"}},))
        if mode is None:
            return SimReply(content=f"{row.task['a']} plus {row.task['b']}.\nAnswer: {gold}")
        if mode == "format":
            return SimReply(content=f"The total is {gold}.")
        if mode == "arithmetic":
            return SimReply(content=f"Adding up.\nAnswer: {gold + rng.randint(1, 9)}")
        return SimReply(content=f"Guessing without tools.\nAnswer: {gold + rng.randint(10, 20)}")


def make_policy(**kwargs: Any):
    from engine.sim.policy import Policy

    bench = ArithBenchmark()
    return Policy({"arith": (bench, bench.load_rows(bench.splits().eval_ids))}, **kwargs)


def build_fake_policy(tasks: Sequence[str], data_dir: str | None = None, reflection_model: str = "simulated-reflection"):
    """Drop-in for engine.sim.build.build_policy used by the CLI subprocess test."""
    return make_policy(reflection_model=reflection_model)


def answering_messages(row_id: str, extra_system: str = "", task_prefix: str = "") -> list[dict[str, Any]]:
    bench = ArithBenchmark()
    row = bench.load_rows([row_id])[0]
    system = f"{CONTRACT}\nYou are a careful solver.\n{extra_system}".strip()
    return [{"role": "system", "content": system},
            {"role": "user", "content": task_prefix + bench.render_task(row)}]
