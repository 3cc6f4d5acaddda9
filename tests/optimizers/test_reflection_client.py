"""The reflection client: protocol sampling, logical seeds, recorded before use, replayed instead of re-sent."""

from __future__ import annotations

import json
import sqlite3

import pytest

from core.canonical import sha256_hex
from core.errors import InfrastructureError
from core.seeds import request_seed
from engine.chat.endpoint import Endpoint
from engine.reflection import ReflectionClient
from engine.runner import RetryPolicy
from engine.sim.faults import FaultPlan, ScheduledFault
from engine.store import Store
from tests.conftest import start_sim
from tests.fakebench import FakeBench

pytestmark = pytest.mark.anyio
PROMPT = "<current_instruction>\nSolve it.\n</current_instruction>\nFeedback: wrong (arithmetic error)."


async def ask(db, url, prompt=PROMPT, key="iteration=1|role=solver"):
    endpoint = Endpoint(url, "simulated-reflection")
    try:
        async with Store(db, run_id="cell") as store:
            await store.add_node(node_id="run/cell", parent_id=None, instance_key="cell", task_key="job",
                                 status="running", worker_key=None, level=0, actor="test")
            client = ReflectionClient(endpoint=endpoint, store=store, run_node="run/cell", cell_id="cell",
                                      optimizer_seed=1, retry=RetryPolicy(base_delay=0.0))
            text = await client.propose(prompt, purpose="gepa.mutation", key=key)
            again = await client.propose(prompt, purpose="gepa.mutation", key=key)
            assert again == text
            return client, text
    finally:
        await endpoint.aclose()


async def test_calls_are_recorded_and_replayed_not_resent(tmp_path):
    server = start_sim(FakeBench())
    try:
        db = tmp_path / "card.sqlite"
        client, text = await ask(db, server.base_url)
        assert "Double-check the arithmetic before answering." in text and text.startswith("```")
        assert len(server.log) == 1 and client.live_calls == 1 and client.replayed_calls == 1
        assert client.usage()["model_calls"] == 2 and client.usage()["by_purpose"]["gepa.mutation"]["model_calls"] == 2
        resumed, text2 = await ask(db, server.base_url)  # a new process generation over the same store
        assert text2 == text and len(server.log) == 1 and resumed.live_calls == 0
        assert resumed.usage() == client.usage()
        await ask(db, server.base_url, key="iteration=2|role=solver")  # another logical key: another seed
        assert len(server.log) == 2
    finally:
        server.stop()
    conn = sqlite3.connect(str(db))
    payloads = [json.loads(p) for (p,) in conn.execute("SELECT payload FROM events WHERE event_type='model_call'")]
    conn.close()
    first = payloads[0]
    assert first["component"] == "reflection" and first["replayed_from"] is None
    assert first["seed"] == request_seed(1, "cell", "reflection", "iteration=1|role=solver", sha256_hex(PROMPT),
                                         "gepa.mutation", 0)
    assert first["params"]["chat_template_kwargs"] == {"enable_thinking": True}
    assert (first["params"]["temperature"], first["params"]["top_p"], first["params"]["max_tokens"]) == (1.0, 1.0,
                                                                                                          48000)
    assert all(p["replayed_from"] for p in payloads[1:4])


async def test_infrastructure_failures_are_retried_with_the_same_seed_then_raised(tmp_path):
    server = start_sim(FakeBench(), faults=FaultPlan(schedule=[ScheduledFault("http_500", nth=0)]))
    try:
        _, text = await ask(tmp_path / "a.sqlite", server.base_url)
        assert [e["status"] for e in server.log] == [500, 200] and server.log[0]["key"] == server.log[1]["key"]
    finally:
        server.stop()
    broken = start_sim(FakeBench(), faults=FaultPlan(rates={"http_503": 1.0}))
    try:
        with pytest.raises(InfrastructureError):
            await ask(tmp_path / "b.sqlite", broken.base_url)
        assert len(broken.log) == 3
    finally:
        broken.stop()


async def test_a_context_length_400_is_sent_once_and_counted_by_kind(tmp_path):
    """A 400 answers the same body the same way: not retried unchanged (a 503 is, above); the failures are in the
    component's usage by kind, a clean client's usage has no `failures`."""
    server = start_sim(FakeBench(), faults=FaultPlan(rates={"context_overflow": 1.0}))
    endpoint = Endpoint(server.base_url, "simulated-reflection")
    try:
        async with Store(tmp_path / "c.sqlite", run_id="cell") as store:
            await store.add_node(node_id="run/cell", parent_id=None, instance_key="cell", task_key="job",
                                 status="running", worker_key=None, level=0, actor="test")
            client = ReflectionClient(endpoint=endpoint, store=store, run_node="run/cell", cell_id="cell",
                                      optimizer_seed=1, retry=RetryPolicy(base_delay=0.0))
            assert "failures" not in client.usage()
            for key in ("a", "b"):
                with pytest.raises(InfrastructureError, match="context length"):
                    await client.propose(PROMPT, purpose="gepa.mutation", key=key)
            assert [e["status"] for e in server.log] == [400, 400]  # one request per call
            assert client.usage()["failures"] == {"context_length_exceeded": 2}
    finally:
        await endpoint.aclose()
        server.stop()


def test_a_gepa_job_whose_reflection_answers_400_counts_it_in_optimization_json(tmp_path):
    from tests.optimizers.optjob import read, run

    faults = FaultPlan(schedule=[ScheduledFault("context_overflow", model="simulated-reflection")])
    server = start_sim(FakeBench(n_train=12, n_validation=20, n_test=30), faults=faults)
    try:
        run(tmp_path / "job", server.base_url, method="gepa", budget=80, allow_small_budget=True)
    finally:
        server.stop()
    reflection = [e for e in server.log if e["model"] == "simulated-reflection"]
    assert reflection and all(e["status"] == 400 for e in reflection)
    assert len({e["key"] for e in reflection}) == len(reflection)  # each sent once, never retried unchanged
    usage = read(tmp_path / "job", "optimization.json")["usage"]["reflection"]
    assert usage["failures"] == {"context_length_exceeded": len(reflection)}
