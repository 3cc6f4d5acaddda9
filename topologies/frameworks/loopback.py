"""HTTP clients for a framework's agents to reach the recording gateway on 127.0.0.1.

An OpenAI client builds its own httpx client, and each one loads the system's CA bundle into a fresh TLS context
(about 60-110 ms of CPU each here); a rollout of a 4-agent framework runtime creates 4-8 of them. The gateway is plain
HTTP on loopback, so every client shares one default (verifying) TLS context built once per process instead: the
same behaviour at well under a millisecond per client.

`LeanAsyncOpenAI` is the OpenAI client whose `chat.completions.create` sends the arguments it is given as the JSON
body, without the SDK's typed request transform (`async_maybe_transform` over `CompletionCreateParams`: it walks
the TypedDict annotations of every message and tool, 0.5-0.7 ms of CPU per call here, a third of the engine's whole
budget per call, and for these plain JSON dicts it is the identity). Everything else is the SDK's own: the request
options, headers, timeouts, retries setting and the response parsing into a `ChatCompletion` (or a stream). The
gateway records what arrives, so a divergence would show in the recorded requests the runtime tests compare.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Awaitable, Callable
from functools import cache, cached_property
from typing import Any

import aiohttp
import httpx
import openai
from openai import AsyncOpenAI, AsyncStream
from openai._base_client import make_request_options
from openai._models import construct_type
from openai._types import NotGiven, Omit, not_given
from openai.resources.chat import AsyncChat
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from core.framework import ROUTE_HEADER, AgentLink, GatewaySession

Door = Callable[[str, bytes], Awaitable[tuple[int, Any]]]


@cache
def shared_tls() -> ssl.SSLContext:
    return ssl.create_default_context()


def sync_http_client() -> openai.DefaultHttpxClient:
    """openai's default sync httpx client (its timeouts, limits and redirects) on the shared TLS context."""
    return openai.DefaultHttpxClient(verify=shared_tls())


def async_http_client() -> openai.DefaultAsyncHttpxClient:
    """openai's default async httpx client on the shared TLS context."""
    return openai.DefaultAsyncHttpxClient(verify=shared_tls())


_HOP_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "content-encoding", "connection"})


class AiohttpTransport(httpx.AsyncBaseTransport):
    """httpx's transport interface over one aiohttp session. httpx's own pool rescans every pooled connection on
    each request (engine/chat/endpoint.py measured it: 16 ms of CPU per call at 64 in flight); a client shared by
    all of a gateway's agents pools as many connections as there are calls in flight. aiohttp keeps idle connections
    per host, so a request costs the same however many are pooled. The whole body is read before the response is
    returned (the gateway answers in one piece, streams included); a failure to reach the gateway is httpx's
    `TransportError`, as the OpenAI SDK expects from any transport. No client-side timeout: the engine's recorded
    path owns the deadlines, and the gateway always answers."""

    def __init__(self) -> None:
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=False),
                                              cookie_jar=aiohttp.DummyCookieJar(), trust_env=False,
                                              timeout=aiohttp.ClientTimeout(total=None))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            sent = [(k, v) for k, v in request.headers.multi_items() if k.lower() not in _HOP_HEADERS]
            async with self._session.request(request.method, str(request.url), headers=sent,
                                             data=await request.aread()) as answer:
                content = await answer.read()  # decoded: its length and encoding headers no longer apply
                headers = [(k, v) for k, v in answer.headers.items() if k.lower() not in _HOP_HEADERS]
        except (aiohttp.ClientError, OSError) as exc:
            raise httpx.TransportError(f"{type(exc).__name__}: {exc}", request=request) from exc
        return httpx.Response(answer.status, headers=headers, content=content, request=request)

    async def aclose(self) -> None:
        await self._session.close()


def encode_body(body: Any) -> bytes:
    """A request body as the SDK's HTTP client encodes JSON."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def door_of(gw: GatewaySession) -> Door | None:
    """The gateway's in-process door, when it has one (the engine's gateway in this process)."""
    door: Door | None = getattr(gw, "door", None)
    return door


def route_of(path: str, headers: Any) -> str:
    """The route token of a request: the `/g/<token>/...` path, else the route header."""
    parts = path.split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "g" else str(headers.get(ROUTE_HEADER) or "")


class InProcessTransport(httpx.AsyncBaseTransport):
    """httpx's transport interface on the gateway's door: a chat-completions POST's bytes go to `door`, the answer
    comes back as the HTTP response the gateway's server would have sent; any other request goes over loopback
    HTTP (`AiohttpTransport`, opened on first use)."""

    def __init__(self, door: Door) -> None:
        self.door = door
        self._http: AiohttpTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            if self._http is None:
                self._http = AiohttpTransport()
            return await self._http.handle_async_request(request)
        status, payload = await self.door(route_of(request.url.path, request.headers), await request.aread())
        if isinstance(payload, list):
            return httpx.Response(status, headers=[("content-type", "text/event-stream")],
                                  content=b"".join(payload), request=request)
        return httpx.Response(status, headers=[("content-type", "application/json")], content=encode_body(payload),
                              request=request)

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()


def loopback_async_client(timeout: float | None = None, door: Door | None = None) -> httpx.AsyncClient:
    """An httpx client for the gateway shared by a runtime's agents: on the gateway's door when given
    (`InProcessTransport`), else over aiohttp (`AiohttpTransport`); no proxy from the environment, no TLS, no pool
    limit (the engine's endpoint pool is what limits requests in flight)."""
    transport: httpx.AsyncBaseTransport = AiohttpTransport() if door is None else InProcessTransport(door)
    return httpx.AsyncClient(transport=transport, trust_env=False, timeout=timeout)


class LeanCompletions(AsyncCompletions):
    """`create` sends its keyword arguments as the body (omitted ones dropped), untransformed."""

    async def create(self, *, extra_headers: Any = None, extra_query: Any = None,  # type: ignore[override]
                     extra_body: Any = None, timeout: Any = not_given, **params: Any) -> Any:
        body = {k: v for k, v in params.items() if not isinstance(v, (NotGiven, Omit))}
        return await self._post(
            "/chat/completions", body=body,
            options=make_request_options(extra_headers=extra_headers, extra_query=extra_query, extra_body=extra_body,
                                         timeout=timeout, security={"bearer_auth": True}),
            cast_to=ChatCompletion, stream=bool(body.get("stream")), stream_cls=AsyncStream[ChatCompletionChunk])


class _LeanChat(AsyncChat):
    @cached_property
    def completions(self) -> AsyncCompletions:
        return LeanCompletions(self._client)


class LeanAsyncOpenAI(AsyncOpenAI):
    """AsyncOpenAI whose chat completions skip the typed request transform (`LeanCompletions`)."""

    @cached_property
    def chat(self) -> AsyncChat:
        return _LeanChat(self)


class DoorCompletions(LeanCompletions):
    """`LeanCompletions` on the gateway's door (one agent's route): a non-streamed `create` sends the same JSON body
    to the door and builds the `ChatCompletion` from the answer as the SDK does (`construct_type`, no validation);
    an error status raises the SDK's own status error. A streamed call (or extra query / body) goes over HTTP."""

    def __init__(self, client: AsyncOpenAI, door: Door, route: str) -> None:
        super().__init__(client)
        self._door, self._route = door, route

    async def create(self, *, extra_headers: Any = None, extra_query: Any = None,  # type: ignore[override]
                     extra_body: Any = None, timeout: Any = not_given, **params: Any) -> Any:
        body = {k: v for k, v in params.items() if not isinstance(v, (NotGiven, Omit))}
        if body.get("stream") or extra_query or extra_body:
            return await super().create(extra_headers=extra_headers, extra_query=extra_query, extra_body=extra_body,
                                        timeout=timeout, **params)
        route = str((extra_headers or {}).get(ROUTE_HEADER) or self._route)
        status, answer = await self._door(route, encode_body(body))
        if status != 200:
            request = httpx.Request("POST", f"{str(self._client.base_url).rstrip('/')}/chat/completions")
            raise self._client._make_status_error_from_response(httpx.Response(status, json=answer, request=request))
        return construct_type(type_=ChatCompletion, value=answer)


class _DoorChat(AsyncChat):
    def __init__(self, client: AsyncOpenAI, door: Door, route: str) -> None:
        super().__init__(client)
        self._door, self._route = door, route

    @cached_property
    def completions(self) -> AsyncCompletions:
        return DoorCompletions(self._client, self._door, self._route)


class SharedOpenAI:
    """The lean OpenAI client a gateway's agents share (one loopback HTTP client); `routed(link)` is one agent's
    view of it, whose requests carry the agent's route (`AgentLink.headers`): the SDK's `with_options`, a shallow
    copy sharing the HTTP client and its connections (~0.02 ms)."""

    def __init__(self, base_url: str, api_key: str, timeout: float | None = None, door: Door | None = None) -> None:
        self.door = door
        self.http = loopback_async_client(timeout, door)
        options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        self.client = LeanAsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, http_client=self.http,
                                      **options)

    def routed(self, link: AgentLink) -> AsyncOpenAI:
        client = self.client.with_options(default_headers=link.headers)
        if self.door is not None:  # its non-streamed chat completions straight to the gateway's door
            client.__dict__["chat"] = _DoorChat(client, self.door, link.route)
        return client

    async def aclose(self) -> None:
        await self.http.aclose()


def shared_openai(gw: GatewaySession, link: AgentLink, timeout: float | None = None) -> SharedOpenAI:
    """The gateway's shared lean client for this model id and timeout (built on its first rollout)."""
    shared: SharedOpenAI = gw.shared(("openai", link.model, timeout),
                                     lambda url: SharedOpenAI(url, link.api_key, timeout, door_of(gw)))
    return shared


_STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError, 404: openai.NotFoundError, 500: openai.InternalServerError}


class _Raw:
    """What `with_raw_response.create` returns (LangChain reads `parse()`; no headers)."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self._answer = answer

    def parse(self) -> dict[str, Any]:
        return self._answer


class DirectCompletions:
    """A ChatOpenAI `async_client` on the gateway's door: `with_raw_response.create(**payload)` (LangChain's
    non-streamed call) sends the payload (omitted values dropped, as `LeanCompletions` does) as the JSON body on the
    route its `extra_headers` name and returns the chat.completion dict; an error status raises the SDK's status
    error, as the SDK would. Anything else (a streamed call, extra query or body) is the lean SDK client's (`sdk`)."""

    def __init__(self, door: Door, sdk: Any, base_url: str) -> None:
        self.door, self.sdk, self.url = door, sdk, f"{base_url.rstrip('/')}/chat/completions"

    async def create(self, *, extra_headers: Any = None, extra_query: Any = None, extra_body: Any = None,
                     timeout: Any = not_given, **params: Any) -> Any:
        body = {k: v for k, v in params.items() if not isinstance(v, (NotGiven, Omit))}
        if body.get("stream") or extra_query or extra_body:
            return await self.sdk.with_raw_response.create(extra_headers=extra_headers, extra_query=extra_query,
                                                           extra_body=extra_body, timeout=timeout, **params)
        status, answer = await self.door(route_of("", extra_headers or {}), encode_body(body))
        if status != 200:
            response = httpx.Response(status, json=answer, request=httpx.Request("POST", self.url))
            error = answer.get("error", {}) if isinstance(answer, dict) else {}
            kind = _STATUS_ERRORS.get(status, openai.APIStatusError)
            raise kind(f"Error code: {status} - {answer}", response=response, body=error)
        return _Raw(answer)


class DirectChat:
    """ChatOpenAI's `async_client`: its raw (non-streamed) calls on the door (`DirectCompletions`), its streamed
    ones (`create`, stream=True) on the lean SDK client."""

    def __init__(self, door: Door, sdk: Any, base_url: str) -> None:
        self.sdk = sdk
        self.with_raw_response = DirectCompletions(door, sdk, base_url)

    async def create(self, **params: Any) -> Any:
        return await self.sdk.create(**params)
