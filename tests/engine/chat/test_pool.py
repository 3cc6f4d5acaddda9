"""The outage-aware endpoint pool: health laws (pure), ejection and re-admission, waiting versus failing fast, and
exception containment (engine.containment) of whatever a topology raises."""

from __future__ import annotations

import socket

import anyio
import pytest

from core.errors import ContractError, EndpointStatusError, ScorerError
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts
from engine.chat.health import EndpointHealth, PoolOutage
from engine.containment import AgentFailure, attempt_failure
from tests.conftest import start_sim
from tests.fakebench import FakeBench

BODY = {"model": "test-model", "messages": [{"role": "user", "content": "Question q0: what is 0 + 0?"}],
        "max_tokens": 16, "seed": 1}


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_health_laws():
    h = EndpointHealth(capacity=8, eject_after=2, raise_after=3)
    assert h.usable(0.0)
    assert h.connection_failed(0.0) is False and h.healthy
    h.succeeded()  # a success resets the count
    assert h.connection_failed(0.0) is False
    assert h.connection_failed(0.0) is True and not h.healthy and not h.usable(1.0)
    assert h.connection_failed(0.0) is False  # already out: ejected once
    assert h.readmit(5.0) == 5.0
    assert h.healthy and h.consecutive_failures == 0
    assert h.throttled(10.0, 2.0) == 2.0 and h.limit == 4 and not h.usable(11.0) and h.usable(12.0)
    h.throttled(10.0, None)
    h.throttled(10.0, 0.5)
    h.throttled(10.0, 0.5)
    assert h.limit == 1 and h.paused_until == 12.0  # never below 1; the longest pause wins
    raised = [h.succeeded() for _ in range(9)]
    assert raised.count(True) == 3 and h.limit == 4  # additive increase: +1 per 3 successes


def run_pool(urls: list[str], max_outage: float, calls: int = 1):
    events: list[tuple[str, dict]] = []

    async def sink(kind: str, fields: dict) -> None:
        events.append((kind, fields))

    async def main():
        pool = EndpointPool([Endpoint(u, "test-model", capacity=2, timeouts=Timeouts(connect=1, read=5))
                             for u in urls], max_outage=max_outage, probe_interval=0.05, on_event=sink,
                            routing="least-loaded")  # every endpoint gets tried (routing: tests/engine/chat/test_routing*)
        results = []
        try:
            async with pool.health_probes():
                for _ in range(calls):
                    try:
                        results.append((await pool.chat(BODY))[0]["content"])
                    except PoolOutage as exc:
                        results.append(exc)
        finally:
            await pool.aclose()
        return pool, results

    pool, results = anyio.run(main)
    return pool, results, events


def test_dead_only_endpoint_waits_up_to_max_outage_then_fails_fast(capsys):
    pool, results, events = run_pool([dead_url()], max_outage=0.3, calls=3)
    assert all(isinstance(r, PoolOutage) for r in results)
    kinds = [k for k, _ in events]
    assert kinds.count("endpoint.ejected") == 1 and kinds.count("pool.outage_started") == 1
    assert kinds.count("pool.outage_exceeded") == 1  # later calls fail fast; no second wait is started
    assert kinds[-1] == "pool.summary"
    assert pool.endpoints[0].answered == 0 and pool.endpoints[0].sent == 2  # ejected after 2 connection failures
    err = capsys.readouterr().err
    assert "waiting up to 0.3 s (--max-outage)" in err and "outage longer than --max-outage" in err


def test_a_dead_endpoint_next_to_a_live_one_costs_nothing():
    server = start_sim(FakeBench())
    try:
        pool, results, events = run_pool([dead_url(), server.base_url], max_outage=60, calls=10)
    finally:
        server.stop()
    assert all(isinstance(r, str) and r for r in results)
    assert [k for k, _ in events].count("endpoint.ejected") == 1
    assert pool.endpoints[0].sent <= 2 and pool.endpoints[1].answered == 10
    assert not pool.health[0].healthy and pool.health[1].healthy


def test_an_endpoint_that_comes_back_is_readmitted():
    server = start_sim(FakeBench())
    port = server.port
    server.stop()
    url = f"http://127.0.0.1:{port}/v1"

    async def main():
        events: list[str] = []

        async def sink(kind: str, fields: dict) -> None:
            events.append(kind)
            if kind == "pool.outage_started":  # the endpoint process comes back while the request waits
                revived.append(start_sim_on(port))

        revived: list = []
        pool = EndpointPool([Endpoint(url, "test-model", capacity=2)], max_outage=30, probe_interval=0.05,
                            on_event=sink)
        async with pool.health_probes():
            reply, _ = await pool.chat(BODY)
        await pool.aclose()
        for s in revived:
            s.stop()
        return reply, events

    reply, events = anyio.run(main)
    assert reply["content"]
    assert events[:2] == ["endpoint.ejected", "pool.outage_started"]
    assert "endpoint.readmitted" in events and "pool.outage_ended" in events


def start_sim_on(port: int):
    from engine.sim.server import SimServer
    from tests.conftest import make_policy

    return SimServer(make_policy(FakeBench()), port=port).start()


def test_containment_of_whatever_a_topology_raises():
    infra = EndpointStatusError("HTTP 500", status_code=500)
    assert attempt_failure(ExceptionGroup("agents", [infra])) is infra
    assert attempt_failure(ExceptionGroup("outer", [ExceptionGroup("inner", [KeyError("x"), infra])])) is infra
    scorer = ScorerError("zero observed model calls")
    assert attempt_failure(scorer) is scorer
    failure = attempt_failure(ExceptionGroup("vote", [RecursionError("deep")]))
    assert isinstance(failure, AgentFailure) and "RecursionError" in str(failure)
    assert isinstance(attempt_failure(KeyError("role")), AgentFailure)
    with pytest.raises(ContractError):  # a contract break ends the job, unwrapped
        attempt_failure(ExceptionGroup("agents", [infra, ContractError("bad bundle")]))
    group = BaseExceptionGroup("agents", [KeyboardInterrupt(), infra])
    with pytest.raises(BaseExceptionGroup):
        attempt_failure(group)  # type: ignore[arg-type]
