"""Fault injection as a real client sees it, and the determinism of fault decisions."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from engine.sim.faults import FAULT_KINDS, FaultPlan, RequestFacts, ScheduledFault, parse_fault_spec, request_key
from engine.sim.policy import Policy
from engine.sim.server import SimServer
from tests.engine.sim.fake_benchmark import answering_messages


def chat_body(row_id: str = "r1", seed: int = 1) -> dict[str, Any]:
    return {"model": "qwen", "seed": seed, "messages": answering_messages(row_id), "max_tokens": 256}


def first_request_fault(policy: Policy, kind: str, **plan: Any) -> FaultPlan:
    return FaultPlan(schedule=[ScheduledFault(kind, nth=0)], **plan)


async def post(srv: SimServer, body: dict[str, Any], timeout: float = 30.0) -> httpx.Response:
    async with httpx.AsyncClient(base_url=srv.base_url, timeout=timeout) as client:
        return await client.post("/chat/completions", json=body)


@pytest.mark.anyio
@pytest.mark.parametrize("kind,status", [("http_500", 500), ("http_503", 503)])
async def test_server_errors(policy: Policy, kind: str, status: int) -> None:
    with SimServer(policy, faults=first_request_fault(policy, kind)) as srv:
        response = await post(srv, chat_body())
        assert response.status_code == status and response.headers["X-Simulated-Endpoint"] == "true"
        assert srv.log[0]["fault"] == kind and srv.log[0]["status"] == status


@pytest.mark.anyio
async def test_429_carries_retry_after(policy: Policy) -> None:
    with SimServer(policy, faults=first_request_fault(policy, "http_429", retry_after_s=2)) as srv:
        response = await post(srv, chat_body())
    assert response.status_code == 429 and response.headers["Retry-After"] == "2"


@pytest.mark.slow
@pytest.mark.anyio
async def test_429_seen_by_openai_client(policy: Policy) -> None:
    async def go() -> None:
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="sim", max_retries=0)
        try:
            await client.chat.completions.create(**chat_body())
        finally:
            await client.close()

    with SimServer(policy, faults=first_request_fault(policy, "http_429", retry_after_s=0)) as srv:
        with pytest.raises(openai.RateLimitError) as info:
            await go()
    assert info.value.response.headers["Retry-After"] == "0"


@pytest.mark.anyio
async def test_slow_response_makes_the_client_time_out(policy: Policy) -> None:
    with SimServer(policy, faults=first_request_fault(policy, "slow", slow_s=30)) as srv:
        with pytest.raises(httpx.ReadTimeout):
            await post(srv, chat_body(), timeout=0.2)
        assert srv.log[0]["status"] == "slow" and srv.log[0]["fault"] == "slow"
        # the next request (occurrence 1 of the same key) is answered normally
        assert (await post(srv, chat_body())).status_code == 200


@pytest.mark.anyio
async def test_reset_is_a_connection_error(policy: Policy) -> None:
    with SimServer(policy, faults=first_request_fault(policy, "reset")) as srv:
        with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
            await post(srv, chat_body())
        assert srv.log[0]["status"] == "reset"
        assert (await post(srv, chat_body())).status_code == 200


@pytest.mark.anyio
async def test_reset_seen_by_openai_client(policy: Policy) -> None:
    async def go() -> None:
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="sim", max_retries=0)
        try:
            await client.chat.completions.create(**chat_body())
        finally:
            await client.close()

    with SimServer(policy, faults=first_request_fault(policy, "reset")) as srv:
        with pytest.raises(openai.APIConnectionError):
            await go()


@pytest.mark.anyio
async def test_malformed_json(policy: Policy) -> None:
    with SimServer(policy, faults=first_request_fault(policy, "malformed_json")) as srv:
        response = await post(srv, chat_body())
    assert response.status_code == 200
    with pytest.raises(ValueError):
        response.json()


@pytest.mark.anyio
async def test_empty_choices(policy: Policy) -> None:
    with SimServer(policy, faults=first_request_fault(policy, "empty_choices")) as srv:
        response = await post(srv, chat_body())
    assert response.status_code == 200 and response.json()["choices"] == []
    assert response.json()["simulated"] is True


@pytest.mark.anyio
async def test_context_overflow_is_a_vllm_like_400(policy: Policy) -> None:
    async def go() -> None:
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="sim", max_retries=0)
        try:
            await client.chat.completions.create(**chat_body())
        finally:
            await client.close()

    with SimServer(policy, faults=first_request_fault(policy, "context_overflow", context_length=4096)) as srv:
        with pytest.raises(openai.BadRequestError) as info:
            await go()
    assert "This model's maximum context length is 4096 tokens" in str(info.value)


@pytest.mark.anyio
async def test_schedule_by_key_and_occurrence(policy: Policy) -> None:
    body = chat_body("r2", 9)
    key = request_key(body)
    plan = FaultPlan(schedule=[ScheduledFault("http_503", key=key, occurrence=0),
                               ScheduledFault("http_500", key=key[:12], occurrence=2)])

    async def go() -> list[int]:
        async with httpx.AsyncClient(base_url=srv.base_url) as client:
            statuses = []
            for b in (body, chat_body("r1", 9), body, body, body):
                statuses.append((await client.post("/chat/completions", json=b)).status_code)
            return statuses

    with SimServer(policy, faults=plan) as srv:
        assert await go() == [503, 200, 200, 500, 200]
        log = srv.log
    assert [e["occurrence"] for e in log] == [0, 0, 1, 2, 3]
    assert [e["fault"] for e in log] == ["http_503", None, None, "http_500", None]
    assert srv.keys_served_ok() == [request_key(chat_body("r1", 9)), key, key]


@pytest.mark.anyio
async def test_schedule_by_row_and_nth(policy: Policy) -> None:
    plan = FaultPlan(schedule=[ScheduledFault("http_500", row_id="r3", occurrence=1),
                               ScheduledFault("http_503", nth=0)])

    async def go() -> list[int]:
        async with httpx.AsyncClient(base_url=srv.base_url) as client:
            return [(await client.post("/chat/completions", json=chat_body("r3", s))).status_code for s in range(3)]

    with SimServer(policy, faults=plan) as srv:
        assert await go() == [503, 500, 200]


def test_rate_decisions_are_pure_functions_of_key_and_occurrence() -> None:
    plan = FaultPlan(rates={"http_500": 0.3, "reset": 0.2}, seed=4)
    facts = [RequestFacts(index=i, key=f"{i % 7:064x}", occurrence=i // 7) for i in range(700)]
    decisions = [plan.decide(f) for f in facts]
    shuffled = [plan.decide(RequestFacts(index=999 - f.index, key=f.key, occurrence=f.occurrence)) for f in facts]
    assert decisions == shuffled  # the overall index does not matter
    counts = {k: decisions.count(k) for k in ("http_500", "reset", None)}
    assert 150 < counts["http_500"] < 270 and 90 < counts["reset"] < 190
    # a retry (next occurrence of the same key) is an independent draw
    assert len({plan.decide(RequestFacts(0, "ab" * 32, occ)) for occ in range(50)}) > 1
    assert FaultPlan(rates={"http_500": 0.3, "reset": 0.2}, seed=5).decide(facts[0]) in (*FAULT_KINDS, None)
    assert FaultPlan().decide(facts[0]) is None


@pytest.mark.anyio
async def test_rates_observed_over_http_match_the_plan(policy: Policy) -> None:
    plan = FaultPlan(rates={"http_500": 0.25, "empty_choices": 0.25}, seed=1)
    bodies = [chat_body(r, s) for r in ("r1", "r2", "r3") for s in range(10)]

    async def go() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=srv.base_url) as client:
            return [await client.post("/chat/completions", json=b) for b in bodies]

    with SimServer(policy, faults=plan) as srv:
        responses = await go()
    for b, response in zip(bodies, responses):
        expected = plan.decide(RequestFacts(index=0, key=request_key(b), occurrence=0))
        if expected == "http_500":
            assert response.status_code == 500
        elif expected == "empty_choices":
            assert response.json()["choices"] == []
        else:
            assert response.json()["choices"]


@pytest.mark.parametrize("bad", [{"rates": {"explode": 0.1}}, {"rates": {"http_500": 1.5}},
                                 {"rates": {"http_500": 0.6, "reset": 0.6}}])
def test_bad_plans_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        FaultPlan(**bad)


def test_parse_fault_spec() -> None:
    assert parse_fault_spec("http_429=0.1") == ("http_429", 0.1)
    for bad in ("http_429", "nope=0.1", "reset=x", "reset=2"):
        with pytest.raises(ValueError):
            parse_fault_spec(bad)
