"""The one path of a recorded model call: every model call the engine makes goes through `Recorder.call`.

Given where the call is made (a `CallSite`: an agent turn of a rollout, or an uncharged component call such as
reflection, a judge or a probe) and a request body, the recorder

1. derives the request seed from the site (core.seeds; never a global RNG) and puts it in the body,
2. computes the logical request key (content hash of the body as sent) and looks it up for replay: a successful
   call already recorded under that key is answered from the store, not sent again (resume, same-seed retries);
   an identical request that any recorder of the store is sending now (another rollout on the same item and seed,
   e.g. MASPO's parent and offspring) is waited for, then answered from the store too,
3. otherwise sends the body through the endpoint / outage-aware pool, retrying infrastructure errors with the
   same seed on the one retry path (engine.retry, tenacity) up to the recorder's attempt count,
4. records each attempt BEFORE its result is handed back, in one store operation: the call's node (with its read
   edges), the `model_call` event (request as sent, sampling params, seed, response, usage, latency, error,
   replay origin, `endpoint`: the index of the endpoint it was sent to in its pool, as job.json numbers them,
   null when none was (replayed, or answered by a shared evaluation); large bodies go to content-addressed blobs
   through the store's writer) and the node's final status,
5. returns the response with its usage (`Usage.of_call`).

Agent turns use one attempt (a failed turn fails the rollout attempt, which the runner retries as a whole with the
same seed); component calls use 1 + MAX_INFRA_RETRIES. A framework runtime's gateway builds a `GatewayTurn`
(engine/gateway/turn.py) from the (rollout, role, member, turn) of the request it intercepts and calls
`Recorder.call` like the native topologies do; it is replayed by that logical key, with a request-hash check.
Tool events of an agent turn are recorded here too (`record_tool_event`), so one execution's events share one
sequence; tests/test_layering.py checks that no other module writes events.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from core.canonical import canonical_json, sha256_hex
from core.errors import BadRequestError, InfrastructureError
from core.models import Usage
from core.vocabulary import EventType, NodeFailureKind, NodeStatus
from engine.call_sites import CallSite
from engine.chat.routing import SERVED_BY
from engine.retry import RetryPolicy, retrying
from engine.store import Committed, Store, utc_now


class ChatEndpoint(Protocol):
    @property
    def model_id(self) -> str: ...

    async def chat(self, body: dict[str, Any], encoded: str | None = None) -> tuple[dict[str, Any], float]: ...


@dataclass(frozen=True)
class RecordedCall:
    response: dict[str, Any]
    node_id: str
    usage: Usage
    replayed_from: str | None  # the event id answered from, or None for a live call


@dataclass(frozen=True)
class _Sent:
    """A request body as sent: the dict, its canonical JSON (the bytes on the wire) and that JSON's SHA-256."""

    body: dict[str, Any]
    encoded: str
    sha256: str


@dataclass(frozen=True)
class _Attempt:
    site: CallSite
    body: dict[str, Any]
    request_key: str
    started: str
    response: dict[str, Any] | None
    latency: float
    error: InfrastructureError | None
    replayed_from: str | None
    replay_mismatch: dict[str, str] | None = None
    endpoint: int | None = None


def _mismatch(recorded: dict[str, Any], body_sha256: str) -> dict[str, str] | None:
    """Both request hashes of a call replayed by a logical key (a framework's turn) whose request differs from the
    recorded one, so the card shows the divergence; None when they agree or when replayed by content."""
    if (recorded_hash := recorded.get("request_sha256")) is None:  # replayed by content: nothing to compare
        return None
    if body_sha256 == recorded_hash:
        return None
    return {"recorded_request_sha256": recorded_hash, "request_sha256": body_sha256}


class Recorder:
    """Records the model calls (and tool events) of one task execution `execution_id` into `store`."""

    def __init__(self, *, store: Store, endpoint: ChatEndpoint, execution_id: str, attempts: int = 1,
                 retry: RetryPolicy = RetryPolicy(), record: bool = True):
        self.store, self.endpoint, self.execution_id = store, endpoint, execution_id
        self.attempts, self.retry, self.record = attempts, retry, record
        self.usage = Usage()
        self.live_calls = 0
        self.replayed_calls = 0
        self._sequence = 0

    def _next_sequence(self) -> int:
        seq = self._sequence
        self._sequence += 1
        return seq

    async def call(self, site: CallSite, body: dict[str, Any]) -> RecordedCall:
        """Seed, replay lookup, send with retries, record; the response once it is durable in the store."""
        body = {**body, "model": body.get("model") or self.endpoint.model_id, "seed": site.seed(body)}
        encoded = canonical_json(body)  # once: the content hash, the replay key and the bytes sent
        sent = _Sent(body, encoded, sha256_hex(encoded))
        request_key = site.replay_key(sent.sha256)
        in_flight = self.store.in_flight  # one table per store: every recorder of the job sees every request
        while (waiting := in_flight.get(request_key)) is not None:
            # an identical request is in flight (this execution's or another's, e.g. a parent and its offspring
            # on the same item and seed): wait for it, then replay it (or send, if it failed)
            event = anyio.Event()
            waiting.append(event)
            await event.wait()
        in_flight[request_key] = []
        try:
            return await self._call_once(site, sent, request_key)
        finally:
            for event in in_flight.pop(request_key):
                event.set()

    async def _call_once(self, site: CallSite, sent: _Sent, request_key: str) -> RecordedCall:
        started = utc_now()
        cached = await self.store.find_call(request_key)
        if cached is not None:
            event_id, payload = cached
            response = dict(payload["response"])
            self.replayed_calls += 1
            await self._record(_Attempt(site, sent.body, request_key, started, response, 0.0, None, event_id,
                                        _mismatch(payload, sent.sha256)))
            return self._result(site, request_key, response, event_id)
        response = await self._send(site, sent, request_key, started)
        self.live_calls += 1
        return self._result(site, request_key, response, None)

    async def _send(self, site: CallSite, sent: _Sent, request_key: str, started: str) -> dict[str, Any]:
        if self.attempts == 1:  # an agent turn: its failure fails the rollout attempt
            return await self._send_once(site, sent, request_key, started)
        response: dict[str, Any] = {}
        # a 400 (context length exceeded, any bad request) answers the same body the same way: not sent again
        # unchanged (protocol 5.3's same-seed retries are the rollout's, which the runner makes)
        async for attempt in retrying(self.retry, request_key, self.attempts, InfrastructureError,
                                      never=(BadRequestError,)):
            with attempt:
                if attempt.retry_state.attempt_number > 1:
                    started = utc_now()
                response = await self._send_once(site, sent, request_key, started)
        return response

    async def _send_once(self, site: CallSite, sent: _Sent, request_key: str, started: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        SERVED_BY.set(None)  # the pool sets the endpoint it hands the request to (engine/chat/routing.py)
        try:
            response, latency = await self.endpoint.chat(sent.body, sent.encoded)
        except InfrastructureError as exc:
            await self._record(_Attempt(site, sent.body, request_key, started, None, time.perf_counter() - t0, exc,
                                        None, endpoint=SERVED_BY.get()))
            raise
        await self._record(_Attempt(site, sent.body, request_key, started, response, latency, None, None,
                                    endpoint=SERVED_BY.get()))
        return response

    def _result(self, site: CallSite, request_key: str, response: dict[str, Any],
                replayed_from: str | None) -> RecordedCall:
        usage = Usage.of_call(response.get("usage"))
        self.usage = self.usage + usage
        return RecordedCall(response=response, node_id=site.node(self.execution_id, request_key).node_id,
                            usage=usage, replayed_from=replayed_from)

    async def _record(self, a: _Attempt) -> None:
        """One store operation: the call's node in its final status with its read edges, and the model_call event."""
        if not self.record:
            return
        node = a.site.node(self.execution_id, a.request_key)
        error = a.error
        payload = {
            **a.site.payload(self.execution_id, a.body, a.response),
            "request": {"messages": a.body["messages"], "tools": a.body.get("tools")},
            "params": {k: v for k, v in a.body.items() if k not in ("messages", "tools")},
            "seed": a.body["seed"], "request_key": a.request_key,
            "response": a.response, "latency_seconds": round(a.latency, 6),
            "error": None if error is None else {"kind": error.kind, "type": type(error).__name__,
                                                 "message": str(error), "status_code": error.status_code},
            "replayed_from": a.replayed_from, "endpoint": a.endpoint,
        }
        if a.replay_mismatch is not None:
            payload["replay_mismatch"] = a.replay_mismatch
        sequence = self._next_sequence()
        completed = utc_now()
        store = self.store

        if error is None:
            status, reason, extra = NodeStatus.COMPLETED, None, None
        else:
            status, reason = NodeStatus.FAILED, str(error)
            extra = {"failure": {"kind": NodeFailureKind.INFRA_ERROR, "message": str(error),
                                 "exception_type": type(error).__name__}}

        def op(conn: Any) -> None:
            store.op_call_node(conn, node_id=node.node_id, parent_id=node.parent_id, instance_key=node.instance_key,
                               task_key=node.task_key, worker_key=node.worker_key, level=node.level, actor=node.actor,
                               reads=a.site.reads, status=status, reason=reason, extra=extra)
            store.op_event(conn, execution_id=self.execution_id, node_id=node.node_id, worker_key=node.worker_key,
                           sequence=sequence, event_type=EventType.MODEL_CALL, turn_id=node.node_id,
                           payload=payload, started_at=a.started, completed_at=completed,
                           request_key=a.request_key if error is None else None, ok=error is None)

        await store.write(op)

    def record_tool_event(self, *, node_id: str, worker: str, event_type: EventType, turn_id: str | None,
                          payload: dict[str, Any], started: str, completed: str) -> Committed | None:
        """A tool_call / tool_result event of an agent turn, in this execution's event sequence: queued now, its
        commit returned to be awaited before what it records is used (None when not recording)."""
        if not self.record:
            return None
        sequence = self._next_sequence()
        store = self.store
        return store.submit(lambda conn: store.op_event(
            conn, execution_id=self.execution_id, node_id=node_id, worker_key=worker, sequence=sequence,
            event_type=event_type, turn_id=turn_id, payload=payload, started_at=started, completed_at=completed))
