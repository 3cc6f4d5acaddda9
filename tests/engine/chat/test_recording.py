"""Every sampling knob is sent explicitly and recorded as sent; 429 Retry-After is honoured."""

from __future__ import annotations

import json
import sqlite3

import anyio

from core.models import PromptBundle
from engine.runner import RetryPolicy, RolloutSpec
from engine.sim.faults import FaultPlan, ScheduledFault
from tests.conftest import start_sim
from tests.engine.test_runner import DECODING, run_batch, specs
from tests.fakebench import FakeBench


def test_params_sent_equal_params_recorded(tmp_path):
    bench = FakeBench(n_train=40)
    server = start_sim(bench)
    try:
        anyio.run(lambda: run_batch(server.base_url, tmp_path / "s.sqlite", specs(bench, 3), concurrency=2))
    finally:
        server.stop()
    conn = sqlite3.connect(tmp_path / "s.sqlite")
    payloads = [json.loads(p) for (p,) in conn.execute("SELECT payload FROM events WHERE event_type='model_call'")]
    assert len(payloads) == 3
    for p in payloads:
        params = p["params"]
        assert params["temperature"] == DECODING.temperature == 0.2
        assert params["top_p"] == 0.9 and params["max_tokens"] == 32768
        assert params["repetition_penalty"] == 1.05
        assert params["chat_template_kwargs"] == {"enable_thinking": False}
        assert params["seed"] == p["seed"]
        assert p["response"]["usage"]["prompt_tokens"] is not None
        assert p["response"]["finish_reason"] == "stop" and p["error"] is None
    assert sorted(p["seed"] for p in payloads) == sorted(e["seed"] for e in server.log)


def test_429_retry_after_is_backpressure_not_an_attempt(tmp_path):
    """A 429 pauses its endpoint for Retry-After and the same request (same seed) goes again: one attempt."""
    bench = FakeBench(n_train=40)
    plan = FaultPlan(schedule=[ScheduledFault(kind="http_429", nth=0)], retry_after_s=0.2)
    server = start_sim(bench, faults=plan)
    slept: list[float] = []
    policy = RetryPolicy(base_delay=0.0)
    original = policy.delay

    def spy(attempt, exc, key):
        value = original(attempt, exc, key)
        slept.append(value)
        return value

    object.__setattr__(policy, "delay", spy)
    try:
        from contextlib import AsyncExitStack

        from engine.chat.endpoint import Endpoint, EndpointPool
        from engine.runner import Runner
        from engine.store import Store
        from topologies.single import Single

        async def go():
            async with AsyncExitStack() as stack:
                events = []

                async def sink(kind, fields):
                    events.append((kind, fields, anyio.current_time()))

                pool = EndpointPool([Endpoint(server.base_url, "test-model", capacity=1)], on_event=sink)
                stack.push_async_callback(pool.aclose)
                store = await stack.enter_async_context(Store(tmp_path / "s.sqlite", run_id="r"))
                runner = Runner(store=store, pool=pool, bench=bench, topology=Single(), run_node="run",
                                retry=policy, concurrency=1)
                row = bench.load_rows(["q0"])[0]
                record = await runner.run(RolloutSpec(row=row, bundle=PromptBundle(roles={"solver": "x"}), seed=7,
                                                      phase="optimize", rollout_key="k"), DECODING)
                return record, events

        record, events = anyio.run(go)
        log = server.log
    finally:
        server.stop()
    assert record.attempts == 1 and record.status.usable
    assert slept == []  # no rollout retry happened
    assert [e["status"] for e in log] == [429, 200] and log[0]["seed"] == log[1]["seed"]
    assert [k for k, _, _ in events] == ["endpoint.backpressure"]
    assert events[0][1]["retry_after_s"] == 0.2 and events[0][1]["in_flight_limit"] == 1
    assert events[0][1]["paused_s"] == 0.2  # the endpoint was paused for Retry-After before the request went again
