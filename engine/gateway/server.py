"""The recording gateway: an OpenAI-compatible chat-completions server on 127.0.0.1, inside a job's event loop.

Routes (`<token>` is an agent's opaque route, see engine/gateway/session.py):

* POST /g/<token>/v1/chat/completions: the agent's next recorded turn; `stream: true` gets the same reply as
  server-sent events; POST /v1/chat/completions with the token in the `X-Gateway-Route` header is the same route
  (for a client built once per gateway, `shared`, that names its agent per call);
* GET /g/<token>/v1/models: the task model;
* anything else: 404 with OpenAI's error shape.

Statuses: 400 for a request the gateway cannot forward (it also fails the attempt: the framework is broken),
404 for an unknown or closed route, 502 when the upstream call failed (the attempt fails as that infrastructure
failure), 503 once the attempt has failed. Frameworks must be built with their own retries off (max_retries=0):
a retry would be a new turn with a new seed, and the runner already retries the whole attempt with the same seed.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web

from core.errors import InfrastructureError
from core.framework import ROUTE_HEADER
from engine.chat.body import BodyError, parse_json
from engine.containment import AgentFailure
from engine.gateway.session import RecordedTurns, RolloutSession, SessionFailed, open_session
from engine.gateway.translate import BadRequest, completion, parse_request, stream_events

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

MAX_BODY_BYTES = 64 * 1024 * 1024
T = TypeVar("T")


def _error(status: int, message: str, kind: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": kind, "code": status}}


def _error_response(status: int, message: str, kind: str) -> web.Response:
    return web.json_response(_error(status, message, kind)[1], status=status)


class Gateway:
    """`async with Gateway() as gateway:` serves until the block ends; `gateway.session(ctx, framework)` opens a
    rollout attempt's session."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.requests = 0
        self.handler_seconds = 0.0  # time inside the chat handler, and the part of it spent in the recorded call:
        self.upstream_seconds = 0.0  # their difference is the gateway's own cost (bench/frameworks.py)
        self._routes: dict[str, RolloutSession] = {}
        self._shared: dict[Hashable, Any] = {}  # what runtimes build once per gateway (core.framework)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def __aenter__(self) -> "Gateway":
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post("/g/{token}/v1/chat/completions", self._chat)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/g/{token}/v1/models", self._models)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        # a framework that gives up on a request (its attempt cancelled, its client closed) cancels the recorded call
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0,
                               handler_cancellation=True)
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        site = web.SockSite(runner, sock, backlog=1024)
        try:
            await site.start()
        except BaseException:
            sock.close()
            await runner.cleanup()
            raise
        self._runner = runner
        return self

    async def __aexit__(self, *exc: object) -> None:
        shared, self._shared = list(self._shared.values()), {}
        for thing in shared:
            if hasattr(thing, "aclose"):
                await thing.aclose()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def session(self, ctx: RecordedTurns, framework: str) -> "AbstractAsyncContextManager[RolloutSession]":
        return open_session(self, ctx, framework)

    def shared(self, key: Hashable, build: Callable[[str], T]) -> T:
        """One object per key for this gateway's lifetime, built on first use from the route-free base URL."""
        if key not in self._shared:
            self._shared[key] = build(f"{self.url}/v1")
        thing: T = self._shared[key]
        return thing

    def register(self, token: str, session: RolloutSession) -> None:
        self._routes[token] = session

    def unregister(self, token: str) -> None:
        self._routes.pop(token, None)

    async def _not_found(self, request: web.Request) -> web.Response:
        return _error_response(404, f"no route {request.method} {request.path} on the recording gateway",
                               "not_found")

    async def _models(self, request: web.Request) -> web.Response:
        session = self._routes.get(request.match_info["token"])
        if session is None:
            return _error_response(404, "unknown or closed gateway route", "not_found")
        return web.json_response({"object": "list", "data": [{"id": session.model, "object": "model",
                                                              "owned_by": "mas-promptbench"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        token = request.match_info.get("token") or request.headers.get(ROUTE_HEADER) or ""
        status, payload = await self.door(token, await request.read())
        if isinstance(payload, list):
            return await self._stream(request, payload)
        return web.json_response(payload, status=status)

    async def door(self, token: str, body: bytes) -> tuple[int, dict[str, Any] | list[bytes]]:
        """One chat-completions request on `token`'s route, in process: (status, the JSON answer, or the SSE
        events of a streamed one). The HTTP route answers through it; a runtime's client in this process may call
        it directly (`RolloutSession.door`, topologies/frameworks/loopback.py), skipping the loopback sockets and
        HTTP on both sides: the same body bytes in, the same answer out."""
        started = time.perf_counter()
        try:
            return await self._answer(token, body)
        finally:
            self.handler_seconds += time.perf_counter() - started

    async def _answer(self, token: str, body: bytes) -> tuple[int, dict[str, Any] | list[bytes]]:
        session = self._routes.get(token)
        if session is None:
            return _error(404, "unknown or closed gateway route", "not_found")
        self.requests += 1
        try:  # the chat client's limits (engine/chat/body.py): deep nesting, huge integers, bad UTF-8 -> 400
            parsed = parse_request(parse_json(body))
        except (BadRequest, BodyError) as exc:
            message = str(exc) if isinstance(exc, BadRequest) else f"the request body is {exc}"
            session.fail(AgentFailure(f"{session.framework} sent a request the gateway cannot forward: {message}"))
            return _error(400, message, "invalid_request_error")
        upstream = time.perf_counter()
        try:
            reply = await session.complete(token, parsed)
        except SessionFailed as exc:
            return _error(503, str(exc), "gateway_attempt_failed")
        except InfrastructureError as exc:
            return _error(502, f"upstream call failed: {exc}", "upstream_error")
        except Exception as exc:  # the session keeps it; leaving the session raises it
            return _error(500, f"{type(exc).__name__}: {exc}", "gateway_error")
        finally:
            self.upstream_seconds += time.perf_counter() - upstream
        completion_id = f"chatcmpl-{reply.node_id.replace('/', '-').replace('#', '-')}"
        if not parsed.stream:
            return 200, completion(reply, session.model, completion_id)
        return 200, stream_events(reply, session.model, completion_id, parsed.include_usage)

    @staticmethod
    async def _stream(request: web.Request, events: list[bytes]) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for event in events:
            await response.write(event)
        await response.write_eof()
        return response

