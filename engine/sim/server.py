"""The labelled simulated endpoint: an aiohttp OpenAI-compatible HTTP server on 127.0.0.1.

Routes: POST /v1/chat/completions (answered by a `Policy`, faults from a `FaultPlan`), GET /v1/models, GET
/v1/prefix_cache (engine/sim/prefix_cache.py: its simulated prefix cache); anything else is a 404 JSON error.
Every response carries the header `X-Simulated-Endpoint: true`; every JSON body the fields `"simulated": true` and
`"simulated_note"`.

With `api_key`, every request without `Authorization: Bearer <api_key>` is answered 401 (OpenAI's error shape).
Start-up checks (header `X-MPB-Preflight: 1`, engine/chat/preflight.py) are answered by the policy but neither
logged nor subjected to the fault plan, so request counts and fault schedules see only the workload.

Use it in a thread (`start()` / `stop()` or `with SimServer(...) as server:`) or inside a running loop
(`await start_async()` / `await stop_async()`). The listen backlog is large (4096 by default) so that dozens of
clients connecting at once are not dropped by the kernel (see reference/performance-notes.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections import Counter
from typing import Any

from aiohttp import web

from engine.sim.auth import require_bearer
from engine.sim.concurrency import Concurrency
from engine.sim.fault_responses import (
    FAULT_STATUS,
    RENDERED_FAULTS,
    error_body,
    fault_response,
    json_response,
)
from engine.sim.faults import NO_FAULTS, FaultPlan, RequestFacts, request_key
from engine.sim.listener import stop_accepting
from engine.sim.policy import Policy
from engine.sim.prefix_cache import DEFAULT_CAPACITY_TOKENS, PrefixCache
from engine.sim.requestlog import RequestLog

PREFLIGHT_HEADER = "X-MPB-Preflight"  # engine/chat/preflight.py (the sim does not import the chat client)
DEFAULT_BACKLOG = 4096
MAX_BODY_BYTES = 64 * 1024 * 1024


def pad_content(rendered: dict[str, Any], key: str, size: int) -> None:
    """Prefix the answer with `size` bytes of filler unique to the request (so content addressing cannot merge
    two different responses); the answer line stays last, so scoring is unchanged."""
    message = rendered["choices"][0]["message"]
    if isinstance(message.get("content"), str):
        filler = hashlib.shake_256(key.encode()).hexdigest(size // 2 + 1)[:size]
        message["content"] = f"{filler}\n{message['content']}"


def _resolve(wake: "asyncio.Future[None]") -> None:
    if not wake.done():
        wake.set_result(None)


class SimServer:
    """A real HTTP server speaking the OpenAI chat-completions protocol, scripted by `policy`."""

    def __init__(
        self,
        policy: Policy,
        faults: FaultPlan | None = None,
        delay_s: float = 0.0,
        pad_bytes: int = 0,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: str | None = None,
        backlog: int = DEFAULT_BACKLOG,
        api_key: str | None = None,
        max_model_len: int | None = None,
        prefix_cache_tokens: int = DEFAULT_CAPACITY_TOKENS,
    ) -> None:
        if backlog < 1024:
            raise ValueError("backlog must be >= 1024")
        self.policy = policy
        self.faults = faults or NO_FAULTS
        self.delay_s = float(delay_s)
        self.max_model_len = max_model_len  # reported per model in GET /v1/models (vLLM's field) when set
        self.pad_bytes = int(pad_bytes)  # large responses: this many filler bytes before each row answer
        self.host, self.port, self.backlog = host, port, backlog
        self.prefix_cache = PrefixCache(prefix_cache_tokens)  # engine/sim/prefix_cache.py, GET /v1/prefix_cache
        self._middlewares = [require_bearer(api_key)] if api_key else []
        self._log = RequestLog(log_path)
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._sleepers: set[asyncio.Future[None]] = set()  # requests in their simulated delay
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread_error: BaseException | None = None

    # ------------------------------------------------------------------ addresses and log

    @property
    def base_url(self) -> str:
        if self._runner is None:
            raise RuntimeError("the simulated endpoint is not running")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def log(self) -> list[dict[str, Any]]:
        """A copy of the request log, in arrival order."""
        return self._log.entries()

    def keys_served_ok(self) -> list[str]:
        """Logical keys of requests answered normally (HTTP 200, no fault), in arrival order."""
        return [e["key"] for e in self._log.entries() if e.get("status") == 200 and e.get("fault") is None]

    def status_counts(self) -> Counter[Any]:
        return Counter(e.get("status") for e in self._log.entries())

    def fault_counts(self) -> Counter[str]:
        return Counter(e["fault"] for e in self._log.entries() if e.get("fault"))

    def entries_for_row(self, row_id: str) -> list[dict[str, Any]]:
        return [e for e in self._log.entries() if e.get("row_id") == row_id]

    # ------------------------------------------------------------------ lifecycle (inside a loop)

    async def start_async(self) -> None:
        if self._runner is not None:
            raise RuntimeError("already started")
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=self._middlewares)
        self.concurrency = Concurrency.install(app, PREFLIGHT_HEADER)  # GET /v1/concurrency
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/v1/prefix_cache", self.prefix_cache.handle)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, backlog=self.backlog, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])

    async def stop_async(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
            for wake in list(self._sleepers):
                _resolve(wake)
        runner, self._runner = self._runner, None
        if runner is not None:
            await stop_accepting(runner)
            await runner.cleanup()
        self._log.close()

    async def __aenter__(self) -> "SimServer":
        await self.start_async()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()

    # ------------------------------------------------------------------ lifecycle (background thread)

    def start(self) -> "SimServer":
        """Run the server on a background thread with its own event loop; return once it is listening."""
        if self._thread is not None:
            raise RuntimeError("already started")
        ready = threading.Event()
        loop = asyncio.new_event_loop()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as exc:  # reported to the starting thread
                self._thread_error = exc
                ready.set()
                return
            ready.set()
            loop.run_forever()
            self._finish_loop(loop)  # clean up on this thread: the caller may be running its own loop

        self._thread = threading.Thread(target=run, name="mpb-sim-endpoint", daemon=True)
        self._thread.start()
        ready.wait()
        if self._thread_error is not None:
            self._thread.join()
            self._close_loop()
            self._thread = None
            raise self._thread_error
        return self

    def stop(self) -> None:
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        future = asyncio.run_coroutine_threadsafe(self.stop_async(), loop)
        try:
            future.result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            self._thread = None
            self._loop = None

    @staticmethod
    def _finish_loop(loop: asyncio.AbstractEventLoop) -> None:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()

    def _close_loop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None:
            self._finish_loop(loop)

    def __enter__(self) -> "SimServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ handlers

    async def _wait(self, seconds: float) -> None:
        """Sleep, but wake early when the server is stopping (one timer per request: no task per sleep, as
        `wait_for` would create)."""
        if seconds <= 0:
            return
        assert self._stopping is not None
        if self._stopping.is_set():
            return
        wake = asyncio.get_running_loop().create_future()
        timer = asyncio.get_running_loop().call_later(seconds, _resolve, wake)
        self._sleepers.add(wake)
        try:
            await wake
        finally:
            timer.cancel()
            self._sleepers.discard(wake)

    async def _not_found(self, request: web.Request) -> web.Response:
        return json_response(error_body(f"no route {request.method} {request.path}", "NotFoundError", 404),
                              status=404)

    async def _models(self, request: web.Request) -> web.Response:
        return json_response(self.policy.models_body(self.max_model_len))

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw)
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ValueError("the body must be a JSON object with a 'messages' list")
            if not all(isinstance(m, dict) for m in body["messages"]):
                raise ValueError("every message must be a JSON object")
            if body.get("stream"):
                raise ValueError("the simulated endpoint does not stream; send stream=false")
            key = request_key(body)  # also rejects NaN/Infinity
        except ValueError as exc:
            index, _, _ = self._log.reserve(None, None)
            self._log.record({"index": index, "key": None, "row_id": None, "seed": None, "model": None,
                              "status": 400, "fault": None, "occurrence": 0, "kind": None, "mode": None})
            return json_response(error_body(f"invalid request: {exc}", "BadRequestError", 400), status=400)
        if request.headers.get(PREFLIGHT_HEADER) == "1":  # start-up check: answered, not logged, no faults
            return json_response(self.policy.render(body, self.policy.decide(body), key))

        policy = self.policy
        match = None if policy.is_reflection(body) else policy.lookup(body["messages"])
        row_id = match.row.id if match is not None else None
        seed = body.get("seed")
        model = body.get("model")
        index, occurrence, row_occurrence = self._log.reserve(key, row_id)
        fault = self.faults.decide(RequestFacts(index=index, key=key, occurrence=occurrence, row_id=row_id,
                                                row_occurrence=row_occurrence,
                                                model=model if isinstance(model, str) else None))
        decision = None
        if fault is None or fault in RENDERED_FAULTS:
            decision = policy.decide(body, match)
        status, cached = FAULT_STATUS.get(fault, 200), self.prefix_cache.lookup(body["messages"])
        self._log.record({"index": index, "key": key, "row_id": row_id, "seed": seed, "model": model,
                          "status": status, "fault": fault, "occurrence": occurrence,
                          "kind": decision.kind if decision else None, "mode": decision.mode if decision else None})

        await self._wait(self.delay_s)
        if fault is None:
            rendered = policy.render(body, decision, key)  # type: ignore[arg-type]
            if self.pad_bytes and match is not None:
                pad_content(rendered, key, self.pad_bytes)
            self.prefix_cache.answered(cached, rendered)
            return json_response(rendered)
        return await fault_response(self.faults, self.policy, self._wait, request, fault, body, key, decision)
