"""The recording gateway with a plain OpenAI-client runtime (tests/engine/gateway/clientrun.py): the same seeds,
scores and recorded decoding as the native topology; the framework's sampling overridden and kept; streaming;
faults through the gateway retried with the same seed; bad routes and bodies. (Replay by logical key:
test_gateway_cmd.py.)"""

from __future__ import annotations

import json
import sqlite3
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from core.models import AgentOutput, PromptBundle, Row
from core.protocol import OPTIMIZATION_DECODING
from core.seeds import call_seed
from engine.chat.endpoint import Endpoint, EndpointPool
from engine.gateway.server import Gateway
from engine.runner import RetryPolicy, Runner
from engine.sim.faults import FAULT_KINDS, FaultPlan, ScheduledFault
from engine.store import Store
from tests.conftest import start_sim
from tests.engine.gateway.clientrun import ClientSingle
from tests.engine.test_runner import specs
from tests.fakebench import FakeBench
from topologies.single import Single

DECODING = OPTIMIZATION_DECODING


async def run(url: str, db: Path, topology: Any, batch: list, concurrency: int = 8,
              attempt_timeout: float | None = None) -> list:
    async with AsyncExitStack() as stack:
        pool = EndpointPool([Endpoint(url, "test-model", capacity=concurrency)])
        stack.push_async_callback(pool.aclose)
        gateway = await stack.enter_async_context(Gateway())
        store = await stack.enter_async_context(Store(db, run_id="r"))
        await store.add_node(node_id="run", parent_id=None, instance_key="r", task_key="job", status="running",
                             worker_key=None, level=0, actor="t")
        runner = Runner(store=store, pool=pool, bench=FakeBench(n_train=40), topology=topology, run_node="run",
                        retry=RetryPolicy(base_delay=0.0), concurrency=concurrency, gateway=gateway,
                        attempt_timeout=attempt_timeout)
        return await runner.run_batch(batch, DECODING, None)


def model_calls(db: Path) -> list[dict]:
    conn = sqlite3.connect(str(db))
    try:
        return [json.loads(p) for (p,) in conn.execute(
            "SELECT payload FROM events WHERE event_type='model_call' ORDER BY rowid")]
    finally:
        conn.close()


def summary(records: list) -> list[tuple]:
    return [(r.example_id, r.status.value, r.score, r.request_seed) for r in records]


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True])
def test_gateway_calls_match_native_seeds_scores_and_decoding(tmp_path, stream):
    bench = FakeBench(n_train=40)
    batch = specs(bench, 12)
    server = start_sim(bench)
    try:
        framework = anyio.run(run, server.base_url, tmp_path / "g.sqlite", ClientSingle(stream=stream), batch)
        native = anyio.run(run, server.base_url, tmp_path / "n.sqlite", Single(), batch)
    finally:
        server.stop()
    assert summary(framework) == summary(native)
    assert {r.status.value for r in framework} == {"success", "semantic_failure"}  # a real signal both ways
    g, n = model_calls(tmp_path / "g.sqlite"), model_calls(tmp_path / "n.sqlite")
    assert sorted(c["seed"] for c in g) == sorted(c["seed"] for c in n)
    seeds = {s.seed for s in batch}
    for call in g:
        assert call["seed"] == call_seed(call["seed"], "solver", 0, 0) or call["seed"] in seeds
        assert call["framework"] == "openai_client" and call["role"] == "solver" and call["turn"] == 0
        # the protocol's decoding was sent, whatever the framework asked for
        assert call["params"]["temperature"] == DECODING.temperature
        assert call["params"]["top_p"] == DECODING.top_p
        assert call["params"]["max_tokens"] == DECODING.max_tokens
        asked = call["framework_params"]
        assert asked["temperature"] == "1.7"
        if not stream:
            assert (asked["top_p"], asked["max_tokens"], asked["seed"]) == ("0.3", "7", "99")


@pytest.mark.slow
def test_faults_through_the_gateway_are_retried_with_the_same_seed(tmp_path):
    bench = FakeBench(n_train=40)
    batch = specs(bench, 16)
    clean = start_sim(bench)
    faulty = start_sim(bench, faults=FaultPlan(rates={k: 0.2 / len(FAULT_KINDS) for k in FAULT_KINDS}, seed=5,
                                                slow_s=0.5))
    try:
        reference = anyio.run(run, clean.base_url, tmp_path / "c.sqlite", ClientSingle(), batch)
        records = anyio.run(run, faulty.base_url, tmp_path / "f.sqlite", ClientSingle(), batch)
        injected = sum(faulty.fault_counts().values())
    finally:
        clean.stop()
        faulty.stop()
    assert injected > 0
    usable = [r for r in records if r.status.usable]
    assert len(usable) >= len(batch) - 1  # a row may exhaust its 3 attempts; it is then reported, never charged
    by_id = {r.example_id: r for r in reference}
    for r in usable:
        assert (r.score, r.request_seed) == (by_id[r.example_id].score, by_id[r.example_id].request_seed)
    failed = [c for c in model_calls(tmp_path / "f.sqlite") if c["error"] is not None]
    assert failed and all(c["framework"] == "openai_client" for c in failed)


class RawRequests:
    """A runtime that sends raw HTTP to its route: the bad-route and bad-body answers of the gateway."""

    name, framework = "single", "raw"

    def __init__(self, body: Any):
        self.body = body
        self.seen: list[tuple[int, dict]] = []

    def roles(self, task: str, team_size: int) -> list[str]:
        return ["solver"]

    async def run(self, row: Row, bundle: PromptBundle, ctx: Any, bench: Any) -> AgentOutput:
        async with ctx.gateway(self.framework) as gw:
            link = gw.agent("solver")
            async with httpx.AsyncClient() as client:
                root = link.base_url.rsplit("/g/", 1)[0]
                lost = await client.post(f"{root}/g/not-a-route/v1/chat/completions", json={"messages": []})
                self.seen.append((lost.status_code, lost.json()))
                bad = await client.post(f"{link.base_url}/chat/completions", content=self.body)
                self.seen.append((bad.status_code, bad.json()))
        return AgentOutput(text="never scored", selected_member=0)


POISON_BODIES = {  # the chat client's limits (engine/chat/body.py): one clean 400 each, never a traceback
    "nested too deeply": b"[" * 100_000 + b"]" * 100_000,
    "an integer has too many digits": b'{"messages": [{"role": "user", "content": "x"}], "seed": ' + b"9" * 5000
                                      + b"}",
    "UnicodeDecodeError": b'{"messages": "\xff\xfe"}',
}


@pytest.mark.parametrize("why", sorted(POISON_BODIES))
def test_poison_request_bodies_get_one_clean_400(tmp_path, why):
    bench = FakeBench(n_train=40)
    server = start_sim(bench)
    runtime = RawRequests(POISON_BODIES[why])
    try:
        (record,) = anyio.run(run, server.base_url, tmp_path / "p.sqlite", runtime, specs(bench, 1))
    finally:
        server.stop()
    status, answer = runtime.seen[1]
    assert status == 400 and answer["error"]["message"].startswith("the request body is not valid JSON (")
    assert why in answer["error"]["message"] and "\n" not in answer["error"]["message"]
    assert record.status.value == "infrastructure_failure" and why in (record.error or "")
    assert len(server.log) == 0


@pytest.mark.parametrize("body", [b"{not json", json.dumps({"messages": "hello"}).encode(),
                                  json.dumps({"messages": [{"role": "user", "content": "x"}], "n": 3}).encode()])
def test_unknown_routes_and_unforwardable_bodies_fail_the_attempt_not_the_job(tmp_path, body):
    bench = FakeBench(n_train=40)
    server = start_sim(bench)
    runtime = RawRequests(body)
    try:
        records = anyio.run(run, server.base_url, tmp_path / "b.sqlite", runtime, specs(bench, 1))
    finally:
        server.stop()
    assert runtime.seen[0][0] == 404 and runtime.seen[0][1]["error"]["type"] == "not_found"
    assert runtime.seen[1][0] == 400 and runtime.seen[1][1]["error"]["type"] == "invalid_request_error"
    (record,) = records
    assert record.status.value == "infrastructure_failure" and not record.charged
    assert "cannot forward" in (record.error or "")
    assert len(server.log) == 0  # nothing reached the model endpoint


@pytest.mark.slow
def test_an_attempt_deadline_cancels_the_call_in_the_gateway_and_the_retry_succeeds(tmp_path):
    """The first request hangs past the attempt's deadline: the framework's request is abandoned, the gateway's
    recorded call is cancelled with it, and the attempt is retried with the same seed."""
    bench = FakeBench(n_train=40)
    batch = specs(bench, 1)
    server = start_sim(bench, faults=FaultPlan(schedule=[ScheduledFault(kind="slow", nth=0)], slow_s=5.0))
    try:
        (record,) = anyio.run(lambda: run(server.base_url, tmp_path / "t.sqlite", ClientSingle(), batch,
                                          attempt_timeout=1.5))
    finally:
        server.stop()
    # (a cold start of the OpenAI client may spend the first attempt's deadline before any request: then the
    # hanging request is the second attempt's, and the third succeeds)
    assert record.status.usable and record.attempts in (2, 3) and record.request_seed == batch[0].seed
    assert [e.get("fault") for e in server.log] == ["slow", None]  # the hanging call was abandoned, not re-sent
    assert {e["seed"] for e in server.log} == {batch[0].seed}


class SdkNamed(ClientSingle):
    framework = "openai_agents"


@pytest.mark.slow
def test_the_agents_sdk_requests_go_without_repetition_penalty(tmp_path):
    """Protocol section 2.5: SDK runners omit repetition_penalty; every other runtime sends it."""
    bench = FakeBench(n_train=40)
    batch = specs(bench, 3)
    server = start_sim(bench)
    try:
        anyio.run(run, server.base_url, tmp_path / "s.sqlite", SdkNamed(), batch)
        anyio.run(run, server.base_url, tmp_path / "c.sqlite", ClientSingle(), batch)
    finally:
        server.stop()
    assert all("repetition_penalty" not in c["params"] for c in model_calls(tmp_path / "s.sqlite"))
    assert all(c["params"]["repetition_penalty"] == 1.05 for c in model_calls(tmp_path / "c.sqlite"))
