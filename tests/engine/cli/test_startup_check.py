"""Start-up check: an endpoint that cannot serve the job is refused before anything is written.

Each case is a tiny real aiohttp server that passes GET /models (the old check) but fails the one-token chat
completion in its own way; the job must exit 2 with one line naming the endpoint and the cause, and --out must not
exist afterwards.
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from aiohttp import web

from engine.sim.build import build_policy
from engine.sim.server import SimServer
from tests.engine.cli.hostile import assert_refused, job, snapshot, tiny_server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wrong_model(request: web.Request) -> web.Response:
    body = await request.json()
    return web.json_response({"object": "error", "message": f"The model `{body['model']}` does not exist.",
                              "type": "NotFoundError", "code": 404}, status=404)


async def html(request: web.Request) -> web.Response:
    return web.Response(text="<html><body><h1>Welcome to nginx!</h1></body></html>", content_type="text/html")


async def html_as_json(request: web.Request) -> web.Response:
    return web.Response(text="<!DOCTYPE html><html>login</html>", content_type="application/json")


async def not_json(request: web.Request) -> web.Response:
    return web.Response(text="OK this is not json", content_type="application/json")


async def no_choices(request: web.Request) -> web.Response:
    return web.json_response({"id": "x", "object": "chat.completion", "choices": []})


async def hang(request: web.Request) -> web.Response:
    await asyncio.sleep(3600)
    return web.json_response({})


async def deep_nesting(request: web.Request) -> web.Response:
    return web.Response(text="[" * 50_000 + "]" * 50_000, content_type="application/json")


async def huge_int(request: web.Request) -> web.Response:
    return web.Response(text='{"choices": [{"message": {"content": "OK"}}], "usage": {"total_tokens": ' + "7" * 5000
                        + "}}", content_type="application/json")


async def slow(request: web.Request) -> web.Response:
    await asyncio.sleep(30)  # answers long after the 0.5 s deadline (the server is stopped before then)
    return web.json_response({"choices": [{"message": {"role": "assistant", "content": "OK"}}]})


async def always_503(request: web.Request) -> web.Response:
    return web.json_response({"error": {"message": "model is loading"}}, status=503)


CASES = [
    ("wrong model id", wrong_model, ["HTTP 404", "model 'Qwen/Qwen3.5-9B'", "does not exist"]),
    ("html", html, ["answered HTML"]),
    ("html labelled json", html_as_json, ["answered HTML"]),
    ("non-json", not_json, ["answered non-JSON"]),
    ("no choices", no_choices, ["not a chat completion"]),
    ("hang on post", hang, ["no answer", "within 1.5 s", "(busy server? raise --startup-timeout)"]),
    ("deep nesting", deep_nesting, ["answered non-JSON", "nested too deeply"]),
    ("huge integer", huge_int, ["answered non-JSON", "too many digits"]),
    ("503 for the whole deadline", always_503, ["HTTP 503", "model is loading"]),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,handler,fragments", CASES, ids=[c[0] for c in CASES])
def test_unusable_task_endpoint_is_refused_before_anything_is_written(tmp_path: Path, name, handler, fragments):
    out = tmp_path / "out"
    with tiny_server(handler) as url:
        proc = job(out, "--task-endpoint", url, "--model-id", "Qwen/Qwen3.5-9B", "--startup-timeout", "1.5")
    line = assert_refused(proc, "task endpoint", url, *fragments)
    assert line.startswith("error: task endpoint")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_existing_job_directory_is_not_touched_when_the_endpoint_fails(tmp_path: Path):
    """A finished job re-run against an endpoint that now answers HTML: refused, every file byte-identical."""
    out = tmp_path / "out"
    with SimServer(build_policy(["bfcl"])) as sim:
        first = job(out, "--task-endpoint", sim.base_url, "--model-id", "m")
    assert first.returncode == 0, first.stderr
    before = snapshot(out)
    with tiny_server(html) as url:
        proc = job(out, "--task-endpoint", url, "--model-id", "m", "--startup-timeout", "2")
    assert_refused(proc, "answered HTML")
    assert snapshot(out) == before


@pytest.mark.slow
def test_second_of_two_endpoints_failing_is_named(tmp_path: Path):
    out = tmp_path / "out"
    with SimServer(build_policy(["bfcl"])) as sim, tiny_server(wrong_model) as bad:
        good = sim.base_url
        proc = job(out, "--task-endpoint", good, "--task-endpoint", bad, "--model-id", "m",
                   "--startup-timeout", "3")
    assert_refused(proc, bad, "HTTP 404")
    assert good not in proc.stderr
    assert not out.exists()


@pytest.mark.slow
def test_transient_503_at_start_up_is_tried_again(tmp_path: Path):
    """One 503 while a replica warms up does not refuse the job: the check tries again within its deadline."""
    calls = {"n": 0}
    policy = build_policy(["bfcl"])

    async def flaky_then_sim(request: web.Request) -> web.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            return web.json_response({"error": {"message": "warming up"}}, status=503)
        body = await request.json()
        return web.json_response(policy.respond(body))

    out = tmp_path / "out"
    with tiny_server(flaky_then_sim) as url:
        proc = job(out, "--task-endpoint", url, "--model-id", "m", "--startup-timeout", "5")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "completed"
    assert calls["n"] >= 2


@pytest.mark.slow
@pytest.mark.parametrize("method", ["gepa", "mipro"])
def test_dead_reflection_endpoint_is_refused_before_anything_is_written(tmp_path: Path, method: str):
    out = tmp_path / "out"
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with SimServer(build_policy(["bfcl"])) as sim:
        proc = job(out, "--task-endpoint", sim.base_url, "--model-id", "m", "--reflection-endpoint", dead,
                   "--reflection-model", "simulated-reflection", "--startup-timeout", "3", method=method)
        assert sim.log == []  # not one workload request was sent
    assert_refused(proc, "reflection endpoint", dead, "unreachable")
    assert not out.exists()


@pytest.mark.slow
def test_reflection_endpoint_with_wrong_model_is_refused(tmp_path: Path):
    out = tmp_path / "out"
    with SimServer(build_policy(["bfcl"])) as sim, tiny_server(wrong_model) as bad:
        proc = job(out, "--task-endpoint", sim.base_url, "--model-id", "m", "--reflection-endpoint", bad,
                   "--reflection-model", "no-such-reflector", "--startup-timeout", "3", method="gepa")
    assert_refused(proc, "reflection endpoint", bad, "HTTP 404", "no-such-reflector")
    assert not out.exists()


@pytest.mark.anyio
async def test_simulated_endpoint_answers_the_check_without_logging_it():
    """The in-process simulated endpoint passes the check, and the check is not in its workload request log."""
    import anyio

    from engine.chat.preflight import Target, check_endpoints

    with SimServer(build_policy(["bfcl"])) as sim:
        await check_endpoints([Target(sim.base_url, "simulated-policy", None)], 5.0)
        await check_endpoints([Target(sim.base_url, "simulated-reflection", None, "reflection endpoint")], 5.0)
        assert sim.log == []


@pytest.mark.slow
def test_an_answer_after_the_deadline_says_busy_server(tmp_path: Path):
    out = tmp_path / "out"
    with tiny_server(slow) as url:
        proc = job(out, "--task-endpoint", url, "--model-id", "m", "--startup-timeout", "0.5")
    assert_refused(proc, "no answer to a 1-token chat completion within 0.5 s (busy server? raise --startup-timeout)")
    assert not out.exists()


@pytest.mark.anyio
async def test_the_deadline_is_the_startup_timeout_end_to_end(monkeypatch):
    """aiohttp's session default (total 300 s) used to cut a longer --startup-timeout into an ExceptionGroup: with
    that default shrunk below the server's answer time, the check still waits for the answer within its own
    deadline."""
    import aiohttp
    import aiohttp.client

    from engine.chat.preflight import Target, check_endpoints

    monkeypatch.setattr(aiohttp.client, "DEFAULT_TIMEOUT", aiohttp.ClientTimeout(total=0.01))
    policy = build_policy(["bfcl"])

    async def answers_late(request: web.Request) -> web.Response:
        await asyncio.sleep(0.3)
        return web.json_response(policy.respond(await request.json()))

    with tiny_server(answers_late) as url:
        await check_endpoints([Target(url, "m", None)], 20.0)
