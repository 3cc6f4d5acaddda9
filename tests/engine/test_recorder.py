"""engine.recorder: the one recorded-call path (what a framework runtime's gateway will call).

Over the real simulated HTTP endpoint and a real SQLite store: the seed is derived from the call site (whatever
seed the caller put in the body), the request is recorded as sent with its response, usage and latency, replay
answers from the store without a request, and infrastructure errors are retried on the one tenacity path with
the same seed, each failed attempt recorded.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.canonical import sha256_hex
from core.errors import InfrastructureError
from core.seeds import call_seed, request_seed
from engine.call_sites import AgentTurn, ComponentCall
from engine.chat.endpoint import Endpoint
from engine.recorder import Recorder
from engine.retry import RetryPolicy
from engine.sim.faults import FaultPlan, ScheduledFault
from engine.store import Store
from tests.conftest import start_sim
from tests.fakebench import FakeBench

pytestmark = pytest.mark.anyio
ROLLOUT = "optimize/r1/abc"
BODY = {"messages": [{"role": "user", "content": "What is 2 + 2?"}], "temperature": 0.2, "top_p": 0.9,
        "max_tokens": 64, "seed": 123456}  # a caller's own seed is replaced by the derived one


async def _turns(db: Path, url: str, execution_id: str) -> tuple[Recorder, list[Any]]:
    endpoint = Endpoint(url, "test-model")
    try:
        async with Store(db, run_id="run") as store:
            await store.add_node(node_id=ROLLOUT, parent_id=None, instance_key="r1", task_key="optimize",
                                 status="running", worker_key=None, level=1, actor="test")
            recorder = Recorder(store=store, endpoint=endpoint, execution_id=execution_id)
            first = await recorder.call(AgentTurn(ROLLOUT, 7, "solver", 1, 0), BODY)
            second = await recorder.call(AgentTurn(ROLLOUT, 7, "solver", 1, 1, reads=(first.node_id,)), BODY)
            return recorder, [first, second]
    finally:
        await endpoint.aclose()


def _events(db: Path) -> list[tuple[str, str, dict[str, Any], int | None]]:
    conn = sqlite3.connect(str(db))
    try:
        return [(eid, etype, json.loads(p), ok) for eid, etype, p, ok in
                conn.execute("SELECT event_id, event_type, payload, ok FROM events ORDER BY rowid")]
    finally:
        conn.close()


def _node_status(db: Path, node_id: str) -> str:
    conn = sqlite3.connect(str(db))
    try:
        return str(conn.execute("SELECT status FROM nodes WHERE node_id=?", (node_id,)).fetchone()[0])
    finally:
        conn.close()


async def test_agent_turns_are_seeded_from_the_site_recorded_as_sent_and_replayed(tmp_path):
    server = start_sim(FakeBench())
    db = tmp_path / "card.sqlite"
    try:
        recorder, calls = await _turns(db, server.base_url, f"{ROLLOUT}#g0a1")
        seeds = [call_seed(7, "solver", 1, 0), call_seed(7, "solver", 1, 1)]
        assert [e["seed"] for e in server.log] == seeds and 123456 not in seeds
        events = _events(db)
        assert [(etype, ok) for _, etype, _, ok in events] == [("model_call", 1), ("model_call", 1)]
        for (_, _, payload, _), call, seed in zip(events, calls, seeds):
            assert payload["seed"] == payload["params"]["seed"] == seed
            assert payload["request"]["messages"] == BODY["messages"] and payload["params"]["model"] == "test-model"
            assert payload["response"] == call.response and payload["error"] is None
            assert (payload["role"], payload["member"]) == ("solver", 1) and payload["replayed_from"] is None
            assert payload["latency_seconds"] >= 0 and _node_status(db, call.node_id) == "completed"
        assert calls[1].node_id == f"{ROLLOUT}#g0a1/solver.1/t1"
        conn = sqlite3.connect(str(db))
        edges = conn.execute("SELECT source_node_id, target_node_id FROM edges").fetchall()
        conn.close()
        assert edges == [(calls[0].node_id, calls[1].node_id)]
        prompt = sum(c.response["usage"]["prompt_tokens"] for c in calls)
        assert recorder.usage.n_llm_calls == 2 and recorder.usage.prompt_tokens == prompt > 0
        assert (recorder.live_calls, recorder.replayed_calls) == (2, 0)

        replay, again = await _turns(db, server.base_url, f"{ROLLOUT}#g1a1")  # a resumed process
        assert len(server.log) == 2 and (replay.live_calls, replay.replayed_calls) == (0, 2)
        assert [c.response for c in again] == [c.response for c in calls]
        assert [c.replayed_from for c in again] == [eid for eid, _, _, _ in events]
        assert replay.usage == recorder.usage
    finally:
        server.stop()


async def _component(db: Path, url: str, attempts: int, spy: list[int]) -> Recorder:
    policy = RetryPolicy(base_delay=0.0)
    original = policy.delay

    def delay(attempt: int, exc: BaseException | None, key: str) -> float:
        spy.append(attempt)
        return original(attempt, exc, key)

    object.__setattr__(policy, "delay", delay)
    endpoint = Endpoint(url, "simulated-reflection")
    try:
        async with Store(db, run_id="run") as store:
            await store.add_node(node_id="run", parent_id=None, instance_key="c", task_key="job",
                                 status="running", worker_key=None, level=0, actor="test")
            recorder = Recorder(store=store, endpoint=endpoint, execution_id="judge#g0", attempts=attempts,
                                retry=policy)
            site = ComponentCall(run_node="run", component="judge", purpose="mas_zero.judge", key="k1",
                                 optimizer_seed=1, cell_id="cell")
            await recorder.call(site, BODY)
            return recorder
    finally:
        await endpoint.aclose()


async def test_component_calls_retry_on_the_one_path_with_the_same_seed(tmp_path):
    plan = FaultPlan(schedule=[ScheduledFault("http_500", nth=0), ScheduledFault("http_503", nth=1)])
    server = start_sim(FakeBench(), faults=plan)
    spy: list[int] = []
    try:
        recorder = await _component(tmp_path / "a.sqlite", server.base_url, 3, spy)
        log = server.log
    finally:
        server.stop()
    seed = request_seed(1, "cell", "judge", "k1", sha256_hex("What is 2 + 2?"), "mas_zero.judge", 0)
    assert [e["status"] for e in log] == [500, 503, 200] and {e["seed"] for e in log} == {seed}
    assert spy == [1, 2] and recorder.live_calls == 1
    events = _events(tmp_path / "a.sqlite")
    assert [ok for _, _, _, ok in events] == [0, 0, 1]
    assert [p["error"]["status_code"] if p["error"] else None for _, _, p, _ in events] == [500, 503, None]
    assert {p["component"] for _, _, p, _ in events} == {"judge"}
    node = "judge/mas_zero.judge/" + events[-1][2]["request_key"][:16]
    assert _node_status(tmp_path / "a.sqlite", node) == "completed"


async def test_one_attempt_sites_record_the_failure_and_raise(tmp_path):
    server = start_sim(FakeBench(), faults=FaultPlan(rates={"http_503": 1.0}))
    spy: list[int] = []
    try:
        with pytest.raises(InfrastructureError):
            await _component(tmp_path / "b.sqlite", server.base_url, 1, spy)
        assert len(server.log) == 1  # no second request
    finally:
        server.stop()
    events = _events(tmp_path / "b.sqlite")
    assert [(ok, p["error"]["status_code"], p["response"]) for _, _, p, ok in events] == [(0, 503, None)]


async def test_an_unrecorded_recorder_writes_nothing(tmp_path):
    server = start_sim(FakeBench())
    db = tmp_path / "c.sqlite"
    endpoint = Endpoint(server.base_url, "test-model")
    try:
        async with Store(db, run_id="run") as store:
            recorder = Recorder(store=store, endpoint=endpoint, execution_id="x#g0a1", record=False)
            call = await recorder.call(AgentTurn(ROLLOUT, 7, "solver", 0, 0), BODY)
        assert call.response["content"] and len(server.log) == 1 and server.log[0]["seed"] == 7
    finally:
        await endpoint.aclose()
        server.stop()
    assert _events(db) == []


async def test_identical_concurrent_calls_send_once_and_hold_no_lock_afterwards(tmp_path):
    server = start_sim(FakeBench(), delay_s=0.05)
    endpoint = Endpoint(server.base_url, "simulated-reflection")
    site = ComponentCall(run_node="run", component="probe", purpose="p", key="k", optimizer_seed=0, cell_id="c")
    try:
        async with Store(tmp_path / "d.sqlite", run_id="run") as store:
            recorder = Recorder(store=store, endpoint=endpoint, execution_id="probe#g0", attempts=3)
            results: list[Any] = []

            async def one() -> None:
                results.append(await recorder.call(site, BODY))

            async with anyio.create_task_group() as tg:
                for _ in range(4):
                    tg.start_soon(one)
        assert len(server.log) == 1 and (recorder.live_calls, recorder.replayed_calls) == (1, 3)
        assert len({json.dumps(r.response, sort_keys=True) for r in results}) == 1
        assert store.in_flight == {}  # keys are held only while their request is in flight
    finally:
        await endpoint.aclose()
        server.stop()


async def _two_rollouts(db: Path, url: str) -> tuple[list[Any], list[Recorder]]:
    """The same agent turn (same rollout seed, role, member and turn: the same body) of two rollouts at once, as
    MASPO's parent and offspring on one item and seed send it when the role being searched comes later."""
    endpoint = Endpoint(url, "test-model")
    outcomes: list[Any] = [None, None]
    try:
        async with Store(db, run_id="run") as store:
            recorders = []
            for i, node in enumerate(("optimize/parent", "optimize/child")):
                await store.add_node(node_id=node, parent_id=None, instance_key=f"r{i}", task_key="optimize",
                                     status="running", worker_key=None, level=1, actor="test")
                recorders.append(Recorder(store=store, endpoint=endpoint, execution_id=f"{node}#g0a1"))

            async def one(i: int, node: str) -> None:
                try:
                    outcomes[i] = await recorders[i].call(AgentTurn(node, 7, "solver", 1, 0), BODY)
                except InfrastructureError as exc:
                    outcomes[i] = exc

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, 0, "optimize/parent")
                await anyio.sleep(0.01)  # the parent's request is on the wire when the child's turn asks
                tg.start_soon(one, 1, "optimize/child")
            assert store.in_flight == {}
        return outcomes, recorders
    finally:
        await endpoint.aclose()


async def test_an_identical_request_of_another_rollout_in_flight_is_waited_for_and_replayed(tmp_path):
    server = start_sim(FakeBench(), delay_s=0.1)
    db = tmp_path / "card.sqlite"
    try:
        (parent, child), recorders = await _two_rollouts(db, server.base_url)
        assert len(server.log) == 1  # the endpoint answered once
        assert [(r.live_calls, r.replayed_calls) for r in recorders] == [(1, 0), (0, 1)]
        assert parent.replayed_from is None and child.replayed_from is not None
        assert child.response == parent.response
        events = {eid: payload for eid, _, payload, _ in _events(db)}
        assert events[child.replayed_from]["attempt_execution"] == "optimize/parent#g0a1"
        replayed = [p for p in events.values() if p["replayed_from"]]
        assert [p["attempt_execution"] for p in replayed] == ["optimize/child#g0a1"]
    finally:
        server.stop()


async def test_a_failed_identical_request_of_another_rollout_leaves_the_waiter_to_send_its_own(tmp_path):
    server = start_sim(FakeBench(), delay_s=0.1, faults=FaultPlan(schedule=[ScheduledFault(kind="http_500", nth=0)]))
    db = tmp_path / "card.sqlite"
    try:
        (parent, child), recorders = await _two_rollouts(db, server.base_url)
        assert isinstance(parent, InfrastructureError)  # an agent turn has one attempt
        assert child.replayed_from is None and [r.live_calls for r in recorders] == [0, 1]
        assert [e["fault"] for e in server.log] == ["http_500", None]
        assert len({e["seed"] for e in server.log}) == 1  # the same request, sent again by the waiter
    finally:
        server.stop()
