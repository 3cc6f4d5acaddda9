"""Stopping the simulated endpoint's listener without losing a connection that was just accepted.

On Python 3.11, asyncio drops a connection it accepted in the very loop turn in which the server closed: the
accepted socket's transport fails to attach to the closed server (an assertion, swallowed), so the connection is
never handed to aiohttp, never answered and never closed, and its client waits out its whole read timeout (30 min
for a reflection call). It was seen as a rare hang in the outage tests: the stop had begun in the same turn as an
`_accept_connection2` for a new connection.

So the listener stops reading its sockets first, and the connections already accepted are let through (each one
reaches aiohttp, which then closes it in its own shutdown) before aiohttp closes the server.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

SETTLE_TURNS = 3


async def stop_accepting(runner: web.AppRunner) -> None:
    loop = asyncio.get_running_loop()
    for site in runner.sites:
        server = getattr(site, "_server", None)  # the site's asyncio.Server (aiohttp keeps no public handle)
        for sock in getattr(server, "sockets", ()) or ():
            loop.remove_reader(sock.fileno())  # no accept from here on; a queued connection is reset at close
    for _ in range(SETTLE_TURNS):  # an accepted connection's set-up takes two turns (transport, then the protocol)
        await asyncio.sleep(0)
    accepting = [t for t in asyncio.all_tasks(loop)
                 if getattr(t.get_coro(), "__qualname__", "").endswith("_accept_connection2")]
    if accepting:  # still setting up (asyncio's task for an accepted connection): let each one finish
        await asyncio.wait(accepting)
