"""The reflection client: every reflection / proposal call of every method goes through here (protocol-v1 s. 7).

One endpoint of its own (`--reflection-endpoint` / REFLECTION_MODEL_BASE_URL; the simulated endpoint with model id
"simulated-reflection" when a job runs simulated without one), thinking on, a 48,000-token ceiling, the
method-native temperature / top-p (protocol 5.4 defaults 1.0 / 1.0), and a logical seed per call (section 5.5:
`request_seed(optimizer_seed, cell_id, "reflection", key, sha256(prompt), purpose, 0)`, i.e. the SHA-256 of the
prompt text in the example-id slot, the method's logical key in the iteration slot, the purpose in the role slot).

Recording mirrors engine.agent_context: each call is a node under the run node and a `model_call` event (payload
`component: "reflection"`) written to the store BEFORE the text is handed to the method; a call already recorded
under the same logical request key (content hash of the request body) is replayed from the store, not re-sent.
Reflection calls are not rollouts: they never touch the ledger; their calls and tokens are counted per purpose.

The same mechanism serves the other uncharged model calls a method makes (protocol 8.3/8.4): a `ReflectionClient`
built with `component="judge"` or `component="probe"` over the TASK endpoints (the outage-aware task pool itself),
with that component's decoding (thinking off, the method's temperature / top-p / token cap, the task runners'
repetition penalty). It records under its component name, seeds with the component in the phase slot, and
replays on resume exactly like reflection. `complete(messages, ...)` sends a full message list (a probe's system
prompt + task); `propose(prompt, ...)` is the one-user-message case.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import anyio

from core.canonical import content_hash, sha256_hex
from core.errors import InfrastructureError
from core.protocol import MAX_INFRA_RETRIES, REFLECTION_DECODING
from core.seeds import request_seed
from engine.runner import RetryPolicy
from engine.store import Store, utc_now

COMPONENT = "reflection"


class ChatEndpoint(Protocol):
    @property
    def model_id(self) -> str: ...

    async def chat(self, body: dict[str, Any]) -> tuple[dict[str, Any], float]: ...


class ReflectionClient:
    """Implements core.optimizer.ReflectionModel (and core.optimizer.ModelClient) over one OpenAI-compatible
    endpoint or an outage-aware pool of them, recorded in the store under `component`."""

    def __init__(self, *, endpoint: ChatEndpoint, store: Store, run_node: str, cell_id: str, optimizer_seed: int,
                 temperature: float | None = None, top_p: float | None = None,
                 retry: RetryPolicy = RetryPolicy(), component: str = COMPONENT, max_tokens: int | None = None,
                 thinking: bool | None = None, extra_body: Mapping[str, Any] | None = None):
        self.endpoint = endpoint
        self.component = component
        self.max_tokens = int(REFLECTION_DECODING["max_tokens"]) if max_tokens is None else max_tokens
        self.thinking = bool(REFLECTION_DECODING["thinking"]) if thinking is None else thinking
        self.extra_body = dict(extra_body or {})
        self.store = store
        self.run_node = run_node
        self.cell_id = cell_id
        self.optimizer_seed = optimizer_seed
        self.temperature = REFLECTION_DECODING["temperature"] if temperature is None else temperature
        self.top_p = REFLECTION_DECODING["top_p"] if top_p is None else top_p
        self.retry = retry
        self.execution_id = f"{component}#g{store.generation}"
        self._sequence = 0
        self._usage: dict[str, dict[str, Any]] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self.live_calls = 0
        self.replayed_calls = 0

    # ------------------------------------------------------------------ request
    def body(self, prompt: str, *, purpose: str, key: str) -> dict[str, Any]:
        return self.body_for([{"role": "user", "content": prompt}], purpose=purpose, key=key)

    def body_for(self, messages: Sequence[Mapping[str, str]], *, purpose: str, key: str,
                 temperature: float | None = None, max_tokens: int | None = None) -> dict[str, Any]:
        """The request body; the seed hashes the prompt text (the one user message, else all messages)."""
        msgs = [dict(m) for m in messages]
        text = msgs[0]["content"] if len(msgs) == 1 else content_hash(msgs)
        seed = request_seed(self.optimizer_seed, self.cell_id, self.component, key, sha256_hex(text), purpose, 0)
        return {
            "model": self.endpoint.model_id,
            "messages": msgs,
            "temperature": self.temperature if temperature is None else temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "seed": seed,
            "chat_template_kwargs": {"enable_thinking": self.thinking},
            **self.extra_body,
        }

    async def propose(self, prompt: str, *, purpose: str, key: str, temperature: float | None = None,
                      max_tokens: int | None = None) -> str:
        return await self.complete([{"role": "user", "content": prompt}], purpose=purpose, key=key,
                                   temperature=temperature, max_tokens=max_tokens)

    async def complete(self, messages: Sequence[Mapping[str, str]], *, purpose: str, key: str,
                       temperature: float | None = None, max_tokens: int | None = None) -> str:
        body = self.body_for(messages, purpose=purpose, key=key, temperature=temperature, max_tokens=max_tokens)
        request_key = content_hash(body)
        lock = self._locks.setdefault(request_key, anyio.Lock())
        async with lock:  # identical concurrent requests: the second one replays the first
            response = await self._call(body, request_key, purpose, key)
        self._count(purpose, response.get("usage") or {})
        return response.get("content") or ""

    async def _call(self, body: dict[str, Any], request_key: str, purpose: str, key: str) -> dict[str, Any]:
        node_id = f"{self.component}/{purpose}/{request_key[:16]}"
        cached = await self.store.find_call(request_key)
        if cached is not None:
            event_id, payload = cached
            self.replayed_calls += 1
            await self._record(node_id, body, request_key, purpose, key, payload["response"], 0.0, None, event_id)
            return dict(payload["response"])
        last: InfrastructureError | None = None
        for attempt in range(1, MAX_INFRA_RETRIES + 2):
            t0 = time.perf_counter()
            try:
                response, latency = await self.endpoint.chat(body)
            except InfrastructureError as exc:
                last = exc
                await self._record(node_id, body, request_key, purpose, key, None, time.perf_counter() - t0, exc,
                                   None)
                if attempt <= MAX_INFRA_RETRIES:
                    await anyio.sleep(self.retry.delay(attempt, exc, request_key))
                continue
            self.live_calls += 1
            await self._record(node_id, body, request_key, purpose, key, response, latency, None, None)
            return response
        assert last is not None
        raise last

    # ------------------------------------------------------------------ recording
    async def _record(self, node_id: str, body: dict[str, Any], request_key: str, purpose: str, key: str,
                      response: dict[str, Any] | None, latency: float, error: InfrastructureError | None,
                      replayed_from: str | None) -> None:
        params = {k: v for k, v in body.items() if k != "messages"}
        payload = {
            "component": self.component, "purpose": purpose, "logical_key": key,
            "request": {"messages": body["messages"], "tools": None},
            "params": params, "seed": body["seed"], "request_key": request_key,
            "prompt_sha256": sha256_hex(body["messages"][0]["content"] if len(body["messages"]) == 1
                                        else content_hash(body["messages"])),
            "output_sha256": None if response is None else sha256_hex(response.get("content") or ""),
            "response": response, "latency_seconds": round(latency, 6),
            "finish_reason": None if response is None else response.get("finish_reason"),
            "length_limited": response is not None and response.get("finish_reason") == "length",
            "error": None if error is None else {"kind": error.kind, "type": type(error).__name__,
                                                 "message": str(error), "status_code": error.status_code},
            "replayed_from": replayed_from,
        }
        sequence = self._sequence
        self._sequence += 1
        started = utc_now()
        store = self.store
        component, actor = self.component, f"engine:{self.component}"

        def op(conn: Any) -> None:
            store.op_node(conn, node_id=node_id, parent_id=self.run_node, instance_key=key, task_key=component,
                          status="running", worker_key=component, level=1, actor=actor)
            store.op_event(conn, execution_id=self.execution_id, node_id=node_id, worker_key=component,
                           sequence=sequence, event_type="model_call", turn_id=node_id, payload=payload,
                           started_at=started, completed_at=utc_now(),
                           request_key=request_key if error is None else None, ok=error is None)
            if error is None:
                store.op_status(conn, node_id, "completed", actor=actor)
            else:
                store.op_status(conn, node_id, "failed", actor=actor, reason=str(error),
                                extra={"failure": {"kind": "infra_error", "message": str(error),
                                                   "exception_type": type(error).__name__}})

        await store.write(op)

    # ------------------------------------------------------------------ usage
    def _count(self, purpose: str, usage: Mapping[str, Any]) -> None:
        slot = self._usage.setdefault(purpose, {"model_calls": 0, "prompt_tokens": None,
                                                "completion_tokens": None, "total_tokens": None})
        slot["model_calls"] += 1
        for field in ("prompt_tokens", "completion_tokens", "total_tokens"):
            value = usage.get(field)
            if isinstance(value, int):
                slot[field] = (slot[field] or 0) + value

    def usage(self) -> dict[str, Any]:
        """Totals plus a per-purpose breakdown; the same for a live and a replayed run (replays are not listed)."""
        def total(field: str) -> int | None:
            known = [u[field] for u in self._usage.values() if u[field] is not None]
            return sum(known) if known else None

        return {"model_calls": sum(u["model_calls"] for u in self._usage.values()),
                "prompt_tokens": total("prompt_tokens"), "completion_tokens": total("completion_tokens"),
                "total_tokens": total("total_tokens"), "model_id": self.endpoint.model_id,
                "component": self.component,
                "by_purpose": {k: dict(v) for k, v in sorted(self._usage.items())}}
