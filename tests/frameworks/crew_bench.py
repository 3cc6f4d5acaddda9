"""A small benchmark for the CrewAI / Agents SDK runtime tests: the fake sums posing as GPQA (so GPQA's team specs
apply: sequential stages and debaters with tools), with a calculator the answering agent calls on every third row
(the simulated endpoint then answers the tool result with "Done.", a malformed answer scored 0)."""

from __future__ import annotations

import random
import re
from typing import Any

from core.errors import EndpointConnectionError
from core.models import Row
from core.simulation import SimReply
from tests.fakebench import FakeBench

CALCULATOR = {"type": "function", "function": {
    "name": "calculator", "description": "Evaluate an integer sum such as '3 + 4'.",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}


class ToolSums(FakeBench):
    executes_tools = True

    def __init__(self, n_train: int = 6, n_validation: int = 4, n_test: int = 6, down: frozenset[str] = frozenset()):
        super().__init__(n_train=n_train, n_validation=n_validation, n_test=n_test)
        self.name = "gpqa"  # type: ignore[misc]
        self.tool_runs: list[tuple[str, Any]] = []
        self.down = down  # rows whose tool backend is unreachable (an infrastructure failure, not a tool answer)

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return [CALCULATOR]

    async def call_tool(self, row: Row, name: str, arguments: Any) -> str:
        self.tool_runs.append((row.id, arguments))
        if row.id in self.down:
            raise EndpointConnectionError(f"the calculator backend is unreachable for {row.id}")
        expression = arguments.get("expression", "") if isinstance(arguments, dict) else ""
        return str(sum(int(n) for n in re.findall(r"-?\d+", str(expression))))

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        if int(row.id[1:]) % 3 == 0:
            numbers = re.findall(r"\d+", row.task["question"].split(":", 1)[1])
            call = {"name": "calculator", "arguments": {"expression": " + ".join(numbers)}}
            return SimReply(content=None, tool_calls=(call,))
        return super().simulate(row, mode, rng)
