"""`n_tool_calls` counts the tool calls of a native-call answer (BFCL Single/Independent), which are the answer
and never executed, as well as executed tool calls."""

from __future__ import annotations

import random
from typing import Any

from core.simulation import SimReply
from core.models import AgentOutput, Row, Score
from tests.conftest import start_sim
from tests.engine.jobutil import run
from tests.fakebench import FakeBench
from tests.optimizers.optjob import read
from tests.topologies.scripted import CALC


class NativeCallBench(FakeBench):
    """Answers are native tool calls (it declares so, as BFCL does)."""

    answer_is_native_call = True

    def __init__(self) -> None:
        super().__init__(n_train=4, n_validation=4, n_test=5)
        self.name = "bfcl"  # type: ignore[misc]

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return [CALC]

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        return SimReply(content=None, tool_calls=(
            {"name": "calculator", "arguments": {"expression": str(row.gold["answer"])}},
            {"name": "calculator", "arguments": {"expression": "0"}}))

    def score(self, row: Row, output: AgentOutput) -> Score:
        ok = bool(output.tool_calls)
        return Score(value=1.0 if ok else 0.0, feedback="Correct." if ok else "No call (format).")


def test_native_call_answers_count_their_tool_calls(tmp_path):
    bench = NativeCallBench()
    server = start_sim(bench)
    try:
        result = run(tmp_path / "job", server.base_url, bench=bench)
    finally:
        server.stop()
    test = result["test"]
    assert test["baseline_scores"] == [1.0] * 5
    usage = read(tmp_path / "job", "test.json")["usage"]["baseline"]
    assert usage["rollouts"] == 5 and usage["tool_calls"] == 10 and usage["model_calls"] == 5
