"""The one scrub point of tool results (engine/agent_context.py `call_tool`): for every tool of every dataset that
executes tools, a result holding the engine's secret values and credential-shaped strings is scrubbed before it is
recorded (the store's tool_result event) and before it is handed back to the topology (and so to the next request).
Native topologies and the framework gateway both reach tools through this method."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks.registry import KNOWN_BENCHMARKS, get_benchmark
from benchmarks.swe.repo_tools import SCHEMAS as SWE_SCHEMAS
from core.models import Row
from engine.agent_context import RecordedAgentContext
from engine.chat.auth import api_key_from_env
from engine.chat.endpoint import Endpoint
from engine.store import Store

SHAPED = ("sk-" + "Z" * 40, "Bearer " + "q" * 30, "hf_" + "W" * 30, "ghp_" + "A" * 36)


def tool_names(name: str) -> list[str]:
    """The tools a dataset's agents are offered (SWE's with checkouts; the rest read off a bare row)."""
    if name == "swe":
        return list(SWE_SCHEMAS)
    bench = get_benchmark(name)
    row = Row(id="r", dataset=name, task={"question": "q", "tools": [], "api_list": []}, gold={})
    try:
        names = [t["function"]["name"] for t in bench.native_tools(row)]
    except (KeyError, TypeError, ValueError):
        names = []
    return names or ["row_declared_tool"]  # a dataset whose tools come from its rows (ToolHop, API-Bank)


CASES = [(name, tool) for name in KNOWN_BENCHMARKS if get_benchmark(name).executes_tools or name == "swe"
         for tool in tool_names(name)]


def test_every_tool_executing_dataset_is_covered():
    assert {name for name, _ in CASES} >= {"swe", "lcb", "apps", "toolhop", "apibank", "math", "hotpotqa"}
    assert {tool for name, tool in CASES if name == "swe"} == set(SWE_SCHEMAS)


@pytest.mark.parametrize("dataset,tool", CASES)
def test_a_tool_result_is_scrubbed_before_it_is_recorded_or_returned(tmp_path: Path, monkeypatch, dataset, tool):
    env_secret = f"plain-{uuid.uuid4().hex}"
    named_key = f"key-{uuid.uuid4().hex}"  # a key under a name that does not look secret (--api-key-env)
    monkeypatch.setenv("MPB_SCRUB_TEST_TOKEN", env_secret)
    monkeypatch.setenv("MY_VLLM", named_key)
    api_key_from_env("MY_VLLM", required=True, what="--api-key-env")
    leaky = f"result of {tool}: {env_secret} {named_key} " + " ".join(SHAPED)

    async def executor(name: str, args: Any) -> str:
        return leaky

    async def main() -> str:
        endpoint = Endpoint("http://127.0.0.1:9/v1", "test-model")
        try:
            async with Store(tmp_path / "card.sqlite", run_id="run") as store:
                await store.add_node(node_id="r1", parent_id=None, instance_key="r1", task_key="optimize",
                                     status="running", worker_key=None, level=1, actor="test")
                ctx = RecordedAgentContext(store=store, pool=endpoint, rollout_node="r1",  # type: ignore[arg-type]
                                           execution_id="e1", rollout_seed=1, decoding={}, tool_executor=executor)
                return await ctx.call_tool(role="solver", member=0, node_id="r1",
                                           call={"name": tool, "id": "c1", "arguments": "{}"})
        finally:
            await endpoint.aclose()

    returned = anyio.run(main)
    conn = sqlite3.connect(tmp_path / "card.sqlite")
    stored = [json.loads(p) for (p,) in conn.execute("SELECT payload FROM events WHERE event_type='tool_result'")]
    conn.close()
    assert len(stored) == 1 and stored[0]["content"] == returned
    assert returned.startswith(f"result of {tool}: [redacted] [redacted]")
    for secret in (env_secret, named_key, *SHAPED):
        assert secret not in returned
    assert (tmp_path / "card.sqlite").read_bytes().count(env_secret.encode()) == 0
