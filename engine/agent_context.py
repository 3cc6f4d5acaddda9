"""The recorded chat handle a topology receives for one rollout attempt (one task execution).

Every chat call becomes an agent-turn node and a `model_call` event written to the store BEFORE its result is
returned to the topology; a successful call already recorded under the same logical request key is replayed
from the store instead of being sent again (resume and same-seed retries re-send only what failed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from core.canonical import content_hash
from core.errors import InfrastructureError
from core.models import Usage
from core.seeds import call_seed
from core.topology import ChatReply
from engine.chat.endpoint import EndpointPool
from engine.store import Store, utc_now

ToolExecutor = Callable[[str, Any], Awaitable[str]]


class RecordedAgentContext:
    def __init__(self, *, store: Store, pool: EndpointPool, rollout_node: str, execution_id: str,
                 rollout_seed: int, decoding: dict[str, Any], tool_executor: ToolExecutor | None,
                 record_calls: bool = True):
        self.store = store
        self.pool = pool
        self.rollout_node = rollout_node
        self.execution_id = execution_id
        self.rollout_seed = rollout_seed
        self.decoding = decoding
        self.tool_executor = tool_executor
        self.record_calls = record_calls
        self.usage = Usage()
        self._sequence = 0
        self._turns: dict[tuple[str, int], int] = {}
        self.calls_observed = 0
        self.replayed_calls = 0

    def _next_sequence(self) -> int:
        seq = self._sequence
        self._sequence += 1
        return seq

    def _body(self, role: str, member: int, turn: int, messages: list[dict[str, Any]],
              tools: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.pool.model_id,
            "messages": messages,
            "temperature": self.decoding["temperature"],
            "top_p": self.decoding["top_p"],
            "max_tokens": self.decoding["max_tokens"],
            "seed": call_seed(self.rollout_seed, role, member, turn),
            "repetition_penalty": self.decoding.get("repetition_penalty", 1.05),
            "chat_template_kwargs": {"enable_thinking": bool(self.decoding.get("thinking", False))},
        }
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = "auto"
        return body

    async def chat(self, *, role: str, member: int, messages: list[dict[str, Any]],
                   tools: Sequence[dict[str, Any]] | None = None, reads: Sequence[str] = ()) -> ChatReply:
        turn = self._turns.get((role, member), 0)
        self._turns[(role, member)] = turn + 1
        node_id = f"{self.execution_id}/{role}.{member}/t{turn}"
        worker = f"{role}.{member}"
        node = {"node_id": node_id, "parent_id": self.rollout_node, "instance_key": f"{worker}/t{turn}",
                "task_key": role, "status": "running", "worker_key": worker, "level": 2, "actor": "engine:agent"}
        body = self._body(role, member, turn, messages, tools)
        request_key = content_hash(body)
        started = utc_now()
        cached = await self.store.find_call(request_key)
        if cached is not None:
            event_id, payload = cached
            response = payload["response"]
            latency = 0.0
            replayed_from: str | None = event_id
            self.replayed_calls += 1
        else:
            replayed_from = None
            t0 = time.perf_counter()
            try:
                response, latency = await self.pool.chat(body)
            except InfrastructureError as exc:
                if self.record_calls:
                    await self._record_turn(node, reads, worker, role, member, turn, body, request_key, None,
                                            time.perf_counter() - t0, exc, started, None)
                raise
        self.calls_observed += 1
        usage = response["usage"]
        self.usage = self.usage + Usage(prompt_tokens=usage.get("prompt_tokens"),
                                        completion_tokens=usage.get("completion_tokens"),
                                        total_tokens=usage.get("total_tokens"), n_llm_calls=1)
        if self.record_calls:
            await self._record_turn(node, reads, worker, role, member, turn, body, request_key, response, latency,
                                    None, started, replayed_from)
        return ChatReply(content=response["content"], tool_calls=tuple(response["tool_calls"]),
                         finish_reason=response["finish_reason"], node_id=node_id, turn=turn,
                         replayed=replayed_from is not None, usage=usage)

    async def _record_turn(self, node: dict[str, Any], reads: Sequence[str], worker: str, role: str, member: int,
                           turn: int, body: dict[str, Any], request_key: str, response: dict[str, Any] | None,
                           latency: float, error: InfrastructureError | None, started: str,
                           replayed_from: str | None) -> None:
        """One store operation: the agent-turn node, its read edges, the model_call event and the final status."""
        node_id = node["node_id"]
        params = {k: v for k, v in body.items() if k not in ("messages", "tools")}
        payload = {
            "role": role, "member": member, "turn": turn, "attempt_execution": self.execution_id,
            "request": {"messages": body["messages"], "tools": body.get("tools")},
            "params": params, "seed": body["seed"], "request_key": request_key,
            "response": response, "latency_seconds": round(latency, 6),
            "error": None if error is None else {"kind": error.kind, "type": type(error).__name__,
                                                 "message": str(error), "status_code": error.status_code},
            "replayed_from": replayed_from,
        }
        sequence = self._next_sequence()
        completed = utc_now()
        store = self.store

        def op(conn: Any) -> None:
            store.op_node(conn, **node)
            for source in reads:
                store.op_edge(conn, source, node_id, actor="engine:agent")
            store.op_event(conn, execution_id=self.execution_id, node_id=node_id, worker_key=worker,
                           sequence=sequence, event_type="model_call", turn_id=node_id, payload=payload,
                           started_at=started, completed_at=completed,
                           request_key=request_key if error is None else None, ok=error is None)
            if error is None:
                store.op_status(conn, node_id, "completed", actor="engine:agent")
            else:
                store.op_status(conn, node_id, "failed", actor="engine:agent", reason=str(error),
                                extra={"failure": {"kind": "infra_error", "message": str(error),
                                                   "exception_type": type(error).__name__}})

        await store.write(op)

    async def call_tool(self, *, role: str, member: int, node_id: str, call: dict[str, Any]) -> str:
        worker = f"{role}.{member}"
        args = call.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
        started = utc_now()
        if self.record_calls:
            await self.store.record_event(
                execution_id=self.execution_id, node_id=node_id, worker_key=worker, sequence=self._next_sequence(),
                event_type="tool_call", turn_id=node_id,
                payload={"tool_name": call["name"], "tool_call_id": call.get("id"), "args": args},
                started_at=started, completed_at=started)
        if self.tool_executor is None:
            result, is_error = f"tool {call['name']!r} is not available", True
        else:
            try:
                result, is_error = await self.tool_executor(call["name"], args), False
            except InfrastructureError:  # a tool's backend is down (e.g. live Wikipedia): retried, never charged
                raise
            except Exception as exc:  # a tool failure is data for the model, not a crash
                result, is_error = f"tool error: {type(exc).__name__}: {exc}", True
        self.usage = self.usage + Usage(n_tool_calls=1)
        if self.record_calls:
            await self.store.record_event(
                execution_id=self.execution_id, node_id=node_id, worker_key=worker, sequence=self._next_sequence(),
                event_type="tool_result", turn_id=None,
                payload={"tool_name": call["name"], "tool_call_id": call.get("id"), "content": result,
                         "is_error": is_error},
                started_at=started, completed_at=utc_now())
        return result
