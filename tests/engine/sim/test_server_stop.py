"""Stopping the simulated endpoint closes every connection it accepted, including one accepted in the very loop
turn the stop began in (Python 3.11 dropped such a connection without closing it, and its client, a reflection
call with a 30-minute read timeout, hung: engine/sim/listener.py)."""

from __future__ import annotations

import asyncio
import socket

import anyio
import pytest

from engine.sim.policy import Policy
from engine.sim.server import SimServer


async def stop_as_a_connection_is_accepted(server: SimServer) -> socket.socket:
    """Connect (the kernel completes the handshake; nobody has accepted yet), then let the next loop turn run the
    queued callback that starts the stop BEFORE the listener's accept: the stop's first step and the new
    connection's set-up then come in that order in the turn after."""
    client = socket.create_connection((server.host, server.port))
    loop = asyncio.get_running_loop()
    stopped = loop.create_future()

    def begin_stop() -> None:
        task = asyncio.ensure_future(server.stop_async())
        task.add_done_callback(lambda t: stopped.set_result(t.exception()))

    loop.call_soon(begin_stop)
    assert await stopped is None
    return client


@pytest.mark.anyio
async def test_a_connection_accepted_as_the_stop_begins_is_closed(policy: Policy) -> None:
    server = SimServer(policy)
    await server.start_async()
    client = await stop_as_a_connection_is_accepted(server)
    client.settimeout(10.0)  # a bound, not a timing: the close arrives at once, or never
    try:
        got = await anyio.to_thread.run_sync(_eof_or_reset, client)
    finally:
        client.close()
    assert got in ("eof", "reset")


def _eof_or_reset(client: socket.socket) -> str:
    try:
        data = client.recv(1)
    except ConnectionResetError:
        return "reset"
    except TimeoutError:
        return "still open after 10 s"
    return "eof" if data == b"" else f"data {data!r}"


@pytest.mark.anyio
async def test_a_request_in_flight_at_the_stop_is_answered_or_closed(policy: Policy) -> None:
    """An ordinary request that is being served when the stop begins ends one way or another, never hangs."""
    server = SimServer(policy, delay_s=0.2)
    await server.start_async()
    reader, writer = await asyncio.open_connection(server.host, server.port)
    body = b'{"model": "qwen", "messages": [{"role": "user", "content": "hi"}], "seed": 1}'
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    await writer.drain()
    await asyncio.sleep(0.05)  # the request is in its simulated delay
    await server.stop_async()
    with anyio.fail_after(10):
        rest = await reader.read()  # to EOF: the answer (or nothing), then the close
    writer.close()
    assert rest == b"" or rest.startswith(b"HTTP/1.1 ")
