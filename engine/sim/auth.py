"""API-key enforcement for the simulated endpoint (like `vllm serve --api-key`): requests without
`Authorization: Bearer <key>` get HTTP 401 in OpenAI's error shape, on every route."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from engine.sim.policy import SIMULATED_NOTE

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def require_bearer(api_key: str) -> Any:
    """An aiohttp middleware accepting only `Authorization: Bearer <api_key>` (constant-time compare)."""
    expected = b"Bearer " + api_key.encode()

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.headers.get("Authorization", "").encode("latin-1", errors="replace")
        if not hmac.compare_digest(given, expected):
            body = {"error": {"message": "Incorrect API key provided.", "type": "AuthenticationError",
                              "param": None, "code": 401}, "simulated": True, "simulated_note": SIMULATED_NOTE}
            return web.Response(text=json.dumps(body), status=401, content_type="application/json",
                                headers={"X-Simulated-Endpoint": "true", "WWW-Authenticate": "Bearer"})
        return await handler(request)

    return check
