"""The simulated endpoint over real HTTP on 127.0.0.1."""

from __future__ import annotations

import pytest

import asyncio
import json

import httpx
import openai

from engine.sim.policy import Policy
from engine.sim.server import SimServer
from tests.engine.sim.fake_benchmark import CALCULATOR, ArithBenchmark, answering_messages

BENCH = ArithBenchmark()


def chat_body(row_id: str, seed: int, **extra: object) -> dict:
    return {"model": "qwen", "seed": seed, "messages": answering_messages(row_id), **extra}


@pytest.mark.anyio
async def test_chat_completion_round_trip_is_labelled_and_deterministic(server: SimServer, policy: Policy) -> None:
    async def go() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.base_url) as client:
            return [await client.post("/chat/completions", json=chat_body("r2", 11)) for _ in range(2)]

    first, second = await go()
    assert first.status_code == 200 and first.headers["X-Simulated-Endpoint"] == "true"
    assert first.content == second.content
    data = first.json()
    assert data["simulated"] is True and data["model"] == "simulated/qwen"
    assert data == policy.respond(chat_body("r2", 11))
    assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")


@pytest.mark.anyio
async def test_openai_client_parses_tool_calls(server: SimServer, policy: Policy) -> None:
    row = BENCH.load_rows(["t1"])[0]
    seed = next(s for s in range(100) if policy.expected_mode(row, answering_messages("t1")[0]["content"], s) is None)

    async def go():
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sim", max_retries=0)
        try:
            return await client.chat.completions.create(model="qwen", messages=answering_messages("t1"),
                                                        tools=[CALCULATOR], seed=seed)
        finally:
            await client.close()

    completion = await go()
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "calculator" and json.loads(call.function.arguments) == {"expression": "21+34"}
    assert completion.system_fingerprint == "mpb-simulated-endpoint"
    assert completion.usage is not None and completion.usage.total_tokens > 0


@pytest.mark.anyio
async def test_models_and_unknown_route(server: SimServer) -> None:
    async def go():
        async with httpx.AsyncClient(base_url=server.base_url) as client:
            return await client.get("/models"), await client.get("/nope"), await client.post("/chat/completions",
                                                                                             content=b"{oops")

    models, missing, bad = await go()
    assert models.status_code == 200 and models.headers["X-Simulated-Endpoint"] == "true"
    ids = [m["id"] for m in models.json()["data"]]
    assert "simulated-reflection" in ids
    assert missing.status_code == 404 and "error" in missing.json()
    assert bad.status_code == 400 and bad.json()["error"]["code"] == 400
    assert server.log[-1]["status"] == 400 and server.log[-1]["key"] is None


@pytest.mark.anyio
async def test_sixty_four_concurrent_requests_are_all_served(policy: Policy) -> None:
    ids = [r.id for r in BENCH.load_rows(BENCH.splits().eval_ids)]

    async def go() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        async with httpx.AsyncClient(limits=limits, timeout=30) as client:
            async def one(i: int) -> httpx.Response:
                return await client.post(f"{srv.base_url}/chat/completions", json=chat_body(ids[i % len(ids)], i))
            tasks = [asyncio.ensure_future(one(i)) for i in range(64)]
            return list(await asyncio.gather(*tasks))

    with SimServer(policy, delay_s=0.05) as srv:
        responses = await go()
        log = srv.log
    assert [r.status_code for r in responses] == [200] * 64
    assert sorted(e["index"] for e in log) == list(range(64))
    assert sorted(e["seed"] for e in log) == list(range(64))
    for i, response in enumerate(responses):
        assert response.json() == policy.respond(chat_body(ids[i % len(ids)], i))


@pytest.mark.anyio
async def test_in_loop_start_and_stop(policy: Policy) -> None:
    async def go() -> int:
        async with SimServer(policy) as srv:
            async with httpx.AsyncClient() as client:
                response = await client.post(f"{srv.base_url}/chat/completions", json=chat_body("r1", 0))
        return response.status_code

    assert await go() == 200


def test_stop_is_idempotent(policy: Policy) -> None:
    srv = SimServer(policy).start()
    srv.stop()
    srv.stop()


def test_port_in_use_raises_and_leaves_nothing_running(policy: Policy) -> None:
    with SimServer(policy) as first:
        taken = SimServer(policy, port=first.port)
        try:
            taken.start()
        except OSError:
            pass
        else:  # pragma: no cover - SO_REUSEADDR does not allow two listeners on Linux
            taken.stop()
            raise AssertionError("a second server bound the same port")


@pytest.mark.anyio
async def test_streaming_requests_are_rejected_with_400(server: SimServer) -> None:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(base_url=server.base_url) as client:
            return await client.post("/chat/completions", json={**chat_body("r1", 0), "stream": True})

    response = await go()
    assert response.status_code == 400 and "stream" in response.json()["error"]["message"]
