"""A request's hard deadline holds while a server keeps the connection busy: headers, then a body dripped one byte at
a time (each read arrives well inside the read timeout, so only the whole-request deadline can end it)."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from core.errors import EndpointTimeout, InfrastructureError
from engine.chat.endpoint import Endpoint, Timeouts

pytestmark = pytest.mark.anyio


async def _dripping_server(writes: list[int]) -> tuple[asyncio.AbstractServer, int]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
        try:
            while True:
                await asyncio.sleep(0.05)
                writer.write(b" ")
                await writer.drain()
                writes.append(1)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


@pytest.mark.slow
async def test_a_dripping_body_ends_at_the_deadline_as_a_timeout():
    writes: list[int] = []
    server, port = await _dripping_server(writes)
    endpoint = Endpoint(f"http://127.0.0.1:{port}/v1", "m", capacity=2,
                        timeouts=Timeouts(connect=1.0, read=0.5, total=1.0))
    try:
        with pytest.raises(InfrastructureError) as caught:
            # the test's own guard (4 s) would raise TimeoutError, not an engine error: only the endpoint's 1 s
            # deadline can produce the EndpointTimeout
            with anyio.fail_after(4):
                await endpoint.chat({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert isinstance(caught.value, EndpointTimeout)
        assert len(writes) >= 5  # the server kept sending inside the read timeout until the deadline
        assert endpoint.limiter.borrowed_tokens == 0  # the slot is given back
    finally:
        await endpoint.aclose()
        server.close()
        await server.wait_closed()
