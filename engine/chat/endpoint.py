"""One endpoint = one shared aiohttp session + one slot limiter (engine.chat.slots, below the connection-pool size).

Why aiohttp (measured: 200 calls at 64 in flight against a local 100 ms endpoint, CPU per call including the
server): openai SDK default transport 3.5 ms, SDK + aiohttp 2.1 ms, bare httpx.AsyncClient 16 ms (pool rescans),
plain aiohttp 0.7 ms. Client CPU per call decides throughput on 2 cores, so the engine speaks the chat-completions
protocol over aiohttp itself; the SDK's retries are off by construction and retry lives in one place (the runner)."""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio

from core.artifacts import EndpointReport
from core.canonical import canonical_json
from core.errors import EndpointConnectionError, EndpointStatusError, InfrastructureError, UsageError
from engine.chat.auth import ApiKey
from engine.chat.slots import Slots
from engine.chat.health import (DEFAULT_MAX_OUTAGE_S, MAX_REDELIVERIES, OUTAGE_LINES, EndpointHealth, EventSink,
                                PoolOutage)
from engine.chat.errors import classify_status, decode_body, parse_completion, translate_exception
from engine.chat.routing import SERVED_BY, Router, make_router
from engine.lifecycle import cancel, running
from engine.log import get_logger

log = get_logger("engine.chat")


@dataclass(frozen=True)
class Timeouts:
    connect: float = 10.0
    read: float = 1200.0
    total: float | None = None

    @property
    def deadline(self) -> float:
        """The hard deadline of one request (aiohttp's `total`): connect + read + a little slack, or `total`."""
        return self.total if self.total is not None else self.connect + self.read + 5.0


class Endpoint:
    def __init__(self, base_url: str, model_id: str, *, capacity: int = 64, timeouts: Timeouts = Timeouts(),
                 api_key: ApiKey | None = None):
        self.base_url = base_url.rstrip("/")
        self.model_id, self.capacity = model_id, capacity
        self.limiter = Slots(capacity)
        self.timeouts = timeouts
        self._api_key = api_key
        self._session: aiohttp.ClientSession | None = None
        self._url, self._deadline = f"{self.base_url}/chat/completions", aiohttp.ClientTimeout(
            timeouts.deadline, sock_connect=timeouts.connect, sock_read=timeouts.read)
        self.sent, self.answered = 0, 0  # requests handed to the transport (probes excluded); of which HTTP 200
        self.report: EndpointReport | None = None  # what it said about itself to the start-up check
        self.max_model_len: int | None = None  # its context window as GET /models reported it (engine/chat/preflight)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self.capacity + 16, limit_per_host=self.capacity + 16)
            headers = {"Content-Type": "application/json"}
            if self._api_key is not None:  # sent only as a header; never recorded (the store records bodies)
                headers["Authorization"] = f"Bearer {self._api_key.reveal()}"
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._deadline, headers=headers,
                json_serialize=canonical_json,
            )
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def chat(self, body: dict[str, Any], encoded: str | None = None) -> tuple[dict[str, Any], float]:
        """POST `encoded` (the canonical JSON of `body`; made here if None) to /chat/completions; returns (parsed
        completion, latency seconds). Raises InfrastructureError."""
        data = (canonical_json(body) if encoded is None else encoded).encode("utf-8")
        async with self.limiter:
            session = self._open()
            started = time.perf_counter()
            self.sent += 1
            try:
                # the hard deadline is aiohttp's own `total` timeout (one timer; no cancel scope per request)
                async with session.post(self._url, data=data, timeout=self._deadline) as resp:
                    text = await resp.text(errors="replace")
                    if resp.status != 200:
                        raise classify_status(resp.status, text, resp.headers)
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                raise translate_exception(exc) from exc
            self.answered += 1
            return parse_completion(decode_body(text)), time.perf_counter() - started

    async def alive(self, timeout: float = 2.0) -> bool:
        """Health probe: does the endpoint serve a one-token chat completion of its model within `timeout`
        seconds? (GET /models alone would re-admit a server whose completions fail.)"""
        session = self._open()
        body = {"model": self.model_id, "messages": [{"role": "user", "content": "health probe"}],
                "max_tokens": 1, "temperature": 0.0}
        try:
            with anyio.fail_after(timeout):
                async with session.post(f"{self.base_url}/chat/completions", data=canonical_json(body)) as resp:
                    text = await resp.text(errors="replace")
                    if resp.status != 200:
                        return False
            parse_completion(decode_body(text))
            return True
        except (aiohttp.ClientError, OSError, TimeoutError, InfrastructureError):
            return False

    async def probe(self) -> None:
        """Start-up check: the endpoint answers GET /models. Raises UsageError (exit 2) if unreachable."""
        session = self._open()
        try:
            async with session.get(f"{self.base_url}/models",
                                   timeout=aiohttp.ClientTimeout(total=self.timeouts.connect + 5)) as resp:
                if resp.status >= 500 or resp.status in (404,):
                    raise UsageError(f"endpoint {self.base_url} answered HTTP {resp.status} to GET /models")
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise UsageError(f"endpoint {self.base_url} is unreachable: {type(exc).__name__}") from exc


class EndpointPool:
    """Outage-aware pool over the task endpoints (one vLLM server per GPU); see `chat` for what is a wait.

    Waits versus the protocol's attempt counters (protocol-v1 5.3): an attempt is one execution of a rollout that
    ended without a scored observation. Nothing the pool absorbs is an attempt, because no answer was observed and
    the same request (same seed) is sent again: a request that never got an HTTP response (refused, reset,
    disconnected) is re-sent up to MAX_REDELIVERIES times while an endpoint is healthy; a 429 (or 503 with
    Retry-After) pauses that endpoint for Retry-After and the request is re-sent once it may go; while no endpoint
    is healthy every request waits, up to `max_outage` seconds for the whole pool. Every ejection, re-admission,
    pause and outage is reported to `on_event` (the job writes them as run mutations into the card) and the
    outage also as a stderr line. Everything else (5xx, timeouts, bad bodies) fails the attempt as before.
    Which usable endpoint serves a request: `routing` decides (engine/chat/routing.py; cache-aware or least-loaded)."""

    def __init__(self, endpoints: list[Endpoint], *, max_outage: float = DEFAULT_MAX_OUTAGE_S,
                 probe_interval: float = 0.5, eject_after: int = 2, on_event: EventSink | None = None,
                 routing: str | Router | None = None):
        if not endpoints:
            raise UsageError("no task endpoint configured")
        self.endpoints, self.router = endpoints, make_router(routing, endpoints)
        self.health = [EndpointHealth(e.capacity, eject_after=eject_after) for e in endpoints]
        self.max_outage, self.probe_interval, self.on_event = max_outage, probe_interval, on_event
        self.stats: Counter[str] = Counter()
        self._outage_since: float | None = None
        self._outage_exceeded = False
        self._background = False
        self._probe_lock = anyio.Lock()
        self._ejected = anyio.Event()  # wakes the background probe as soon as an endpoint is ejected

    @property
    def model_id(self) -> str:
        return self.endpoints[0].model_id

    @property
    def capacity(self) -> int:
        return sum(e.capacity for e in self.endpoints)

    async def probe(self) -> None:
        for ep in self.endpoints:
            await ep.probe()

    async def aclose(self) -> None:
        for ep in self.endpoints:
            await ep.aclose()

    @asynccontextmanager
    async def health_probes(self) -> AsyncIterator["EndpointPool"]:
        """Run the background probe that re-admits ejected endpoints while the block runs (without it, waiting
        requests probe themselves)."""
        async with running(self._probe_forever, cancel):
            self._background = True
            try:
                yield self
            finally:
                self._background = False
        await self._emit("pool.summary", self.summary())

    def summary(self) -> dict[str, Any]:
        """Per-endpoint traffic and health, and the pool's wait counters (the card's record of the pool)."""
        return {"endpoints": [{"endpoint": e.base_url, "sent": e.sent, "answered": e.answered,
                               "healthy": h.healthy, "in_flight_limit": h.limit}
                              for e, h in zip(self.endpoints, self.health)], "routing": self.router.name,
                **{k: int(v) for k, v in sorted(self.stats.items())}}

    # ------------------------------------------------------------------ requests
    async def chat(self, body: dict[str, Any], encoded: str | None = None) -> tuple[dict[str, Any], float]:
        redeliveries, throttled_for, encoded = 0, 0.0, canonical_json(body) if encoded is None else encoded
        while True:
            index = await self._ready(body)
            endpoint, health = self.endpoints[index], self.health[index]
            self.stats["requests_sent"] += 1
            SERVED_BY.set(index)  # the recorder names it in the call's record
            try:
                result = await endpoint.chat(body, encoded)
            except EndpointConnectionError as exc:
                self.stats["redeliveries"] += 1
                redeliveries += 1
                await self._connection_failed(index, exc)
                if redeliveries > MAX_REDELIVERIES:
                    raise
                continue
            except EndpointStatusError as exc:
                if not (exc.status_code == 429 or (exc.status_code == 503 and exc.retry_after is not None)):
                    raise
                throttled_for += await self._throttled(index, exc)
                if throttled_for > self.max_outage:
                    raise
                continue
            finally:
                self.router.finished(index)
            if health.succeeded():
                endpoint.limiter.total_tokens = health.limit
            return result

    async def _ready(self, body: dict[str, Any]) -> int:
        """Index of the endpoint to send `body` to (the router's choice among those that may take a request now);
        waits while none may (bounded by max_outage)."""
        while True:
            now = anyio.current_time()
            usable = [i for i, h in enumerate(self.health) if h.usable(now)]
            if usable:
                if self._outage_since is not None:
                    await self._outage_over()
                return self.router.choose(body, usable)
            healthy = [h for h in self.health if h.healthy]
            if healthy:  # only paused by Retry-After: wait for the earliest pause to end
                await anyio.sleep(max(0.0, min(h.paused_until for h in healthy) - now))
                continue
            await self._outage_wait(now)

    async def _outage_wait(self, now: float) -> None:
        if self._outage_since is None:
            self._outage_since = now
            await self._emit("pool.outage_started", {"endpoints": len(self.endpoints),
                                                     "max_outage_s": self.max_outage})
        elif now - self._outage_since > self.max_outage and not self._outage_exceeded:
            self._outage_exceeded = True
            await self._emit("pool.outage_exceeded", {"waited_s": round(now - self._outage_since, 3)})
        if not self._background:
            await self._probe_ejected()
        if self._outage_exceeded and not any(h.healthy for h in self.health):
            raise PoolOutage(f"no healthy endpoint for more than {self.max_outage:g} s (--max-outage)")
        await anyio.sleep(self.probe_interval)

    async def _outage_over(self) -> None:
        since, self._outage_since = self._outage_since, None
        self._outage_exceeded = False
        if since is None:
            return
        waited = round(anyio.current_time() - since, 3)
        self.stats["outage_seconds"] += int(waited)
        await self._emit("pool.outage_ended", {"waited_s": waited})

    # ------------------------------------------------------------------ health
    async def _connection_failed(self, index: int, exc: EndpointConnectionError) -> None:
        if self.health[index].connection_failed(anyio.current_time()):
            self.stats["ejections"] += 1
            self._ejected.set()
            await self._emit("endpoint.ejected", {"endpoint": self.endpoints[index].base_url,
                                                  "consecutive_failures": self.health[index].consecutive_failures,
                                                  "error": str(exc)[:300]})

    async def _throttled(self, index: int, exc: EndpointStatusError) -> float:
        health, endpoint = self.health[index], self.endpoints[index]
        pause = health.throttled(anyio.current_time(), exc.retry_after)
        endpoint.limiter.total_tokens = health.limit
        self.stats["throttled"] += 1
        await self._emit("endpoint.backpressure", {"endpoint": endpoint.base_url, "status_code": exc.status_code,
                                                   "retry_after_s": exc.retry_after, "paused_s": pause,
                                                   "in_flight_limit": health.limit})
        return pause

    async def _probe_ejected(self) -> None:
        if self._probe_lock.locked():
            return
        async with self._probe_lock:
            for index, health in enumerate(self.health):
                if not health.healthy and await self.endpoints[index].alive(min(2.0, self.probe_interval * 4)):
                    down = health.readmit(anyio.current_time())
                    self.stats["readmissions"] += 1
                    await self._emit("endpoint.readmitted", {"endpoint": self.endpoints[index].base_url,
                                                             "down_s": round(down, 3)})

    async def _probe_forever(self) -> None:
        while True:
            with anyio.move_on_after(self.probe_interval):
                await self._ejected.wait()
            self._ejected = anyio.Event()
            await self._probe_ejected()

    async def _emit(self, kind: str, fields: dict[str, Any]) -> None:
        if kind in OUTAGE_LINES:  # the outage is also a stderr line
            log.warning(OUTAGE_LINES[kind].format_map({"endpoints": len(self.endpoints), "max_outage_s":
                                                       self.max_outage, **fields}), kind=kind, **fields)
        if self.on_event is not None:
            await self.on_event(kind, fields)
