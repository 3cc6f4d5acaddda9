"""The simulated endpoint's own count of concurrent chat completions, readable over HTTP.

`GET /v1/concurrency` answers {"in_flight", "max_in_flight", "requests", "area", "clock"}: the chat completions
being served now, the most ever served at once, how many were served, and the time-integral of `in_flight` up to
`clock` (seconds, monotonic), so a reader computes the mean in flight between two reads as
(area2 - area1) / (clock2 - clock1). Start-up checks (the preflight header) are not counted, as they are not logged.
It is what a test checks an engine's in-flight limit against: the server's view, not the client's.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from aiohttp import web

CHAT_PATH = "/v1/chat/completions"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Concurrency:
    def __init__(self, preflight_header: str):
        self.preflight_header = preflight_header
        self.in_flight = self.max_in_flight = self.requests = 0
        self.area, self._last = 0.0, time.monotonic()

    def _advance(self) -> float:
        now = time.monotonic()
        self.area += self.in_flight * (now - self._last)
        self._last = now
        return now

    @classmethod
    def install(cls, app: web.Application, preflight_header: str) -> Concurrency:
        """A counter, its middleware and its GET route on `app` (before the app's catch-all route is added)."""
        counter = cls(preflight_header)
        app.middlewares.append(counter._middleware)
        app.router.add_get("/v1/concurrency", counter._report)
        return counter

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path != CHAT_PATH or request.headers.get(self.preflight_header) == "1":
            return await handler(request)
        self._advance()
        self.in_flight += 1
        self.requests += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await handler(request)
        finally:
            self._advance()
            self.in_flight -= 1

    async def _report(self, request: web.Request) -> web.Response:
        clock = self._advance()
        return web.json_response({"in_flight": self.in_flight, "max_in_flight": self.max_in_flight,
                                  "requests": self.requests, "area": self.area, "clock": clock})
