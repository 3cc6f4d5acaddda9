"""A tool whose backend is down (e.g. live Wikipedia) makes the rollout an infrastructure failure: retried with
the same seed, never charged, never scored - not a tool error text the model then answers around."""

from __future__ import annotations

import random
from typing import Any

from benchmarks.hotpotqa.live import WikipediaUnavailable
from core.simulation import SimReply
from core.models import Row
from tests.conftest import start_sim
from tests.engine.jobutil import run
from tests.fakebench import FakeBench
from tests.topologies.scripted import CALC


class OutageBench(FakeBench):
    """Every answer starts with a tool call; the tool's backend is unreachable for rows in `down`."""

    executes_tools = True

    def __init__(self, down: set[str]) -> None:
        super().__init__(n_train=4, n_validation=4, n_test=4)
        self.down = down
        self.tool_calls = 0

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return [CALC]

    async def call_tool(self, row: Row, name: str, arguments: Any) -> str:
        self.tool_calls += 1
        if row.id in self.down:
            raise WikipediaUnavailable("Wikipedia API request failed: ConnectError")
        return "42"

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        return SimReply(content=None, tool_calls=({"name": "calculator", "arguments": {"expression": "1+1"}},))


def test_tool_backend_outage_is_an_uncharged_infrastructure_failure(tmp_path):
    probe = OutageBench(set())
    down = {probe.splits().validation[0]}
    bench = OutageBench(down)
    server = start_sim(bench)
    try:
        result = run(tmp_path / "job", server.base_url, bench=bench)
    finally:
        server.stop()
    counts = result["selection"]["validation_failure_counts"]["baseline"]
    assert counts["infrastructure_failures"] == 1 and counts["usable"] == counts["n"] - 1
    assert result["selection"]["fallback_reason"].startswith("invalid_record:")
    assert bench.tool_calls >= 3  # the down row was attempted three times (two same-seed retries)
