"""The recorded chat handle a topology receives for one rollout attempt (one task execution).

Every chat call goes through engine.recorder (seed, replay lookup, send, `model_call` event and agent-turn node
written BEFORE the result is returned to the topology); a successful call already recorded under the same logical
request key is replayed from the store instead of being sent again (resume and same-seed retries re-send only
what failed). Tool calls the model makes are executed here and recorded through the same recorder.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from core.coalition import MemberMask
from core.errors import ContractError, InfrastructureError
from core.framework import GatewaySession
from core.models import Usage
from core.protocol import FRAMEWORK_OMITTED_PARAMS, Decoding
from core.scrub import scrub
from core.seeds import TURN_HASH_SCHEME
from core.topology import ChatReply
from core.vocabulary import EventType
from engine.call_sites import AgentTurn
from engine.chat.auth import recorded_secrets
from engine.chat.body import request_body
from engine.chat.endpoint import EndpointPool
from engine.gateway.turn import GatewayTurn
from engine.recorder import Recorder
from engine.store import Store, utc_now


ToolExecutor = Callable[[str, Any], Awaitable[str]]


class GatewaySessions(Protocol):
    """The recording gateway as the context sees it (engine/gateway/server.py `Gateway`, passed in by the runner
    that serves it): it opens one attempt's session, driving this context's turns."""

    def session(self, ctx: RecordedAgentContext, framework: str) -> AbstractAsyncContextManager[GatewaySession]: ...


class RecordedAgentContext:
    def __init__(self, *, store: Store, pool: EndpointPool, rollout_node: str, execution_id: str,
                 rollout_seed: int, decoding: Decoding, tool_executor: ToolExecutor | None,
                 record_calls: bool = True, gateway: GatewaySessions | None = None, secrets: tuple[str, ...] | None = None,
                 seed_scheme: str = TURN_HASH_SCHEME, control: MemberMask | None = None):
        self.pool = pool
        self.control = control  # the rollout's coalition mask (topologies/coalition.py reads it), else None
        self.seed_scheme = seed_scheme  # the topology's member seed scheme (core.seeds.member_seed_scheme)
        self.secrets = recorded_secrets() if secrets is None else secrets
        self.rollout_node = rollout_node
        self.execution_id = execution_id
        self.rollout_seed = rollout_seed
        self.decoding = decoding
        self.tool_executor = tool_executor
        self._gateway = gateway
        self.recorder = Recorder(store=store, endpoint=pool, execution_id=execution_id, attempts=1,
                                 record=record_calls)
        self.usage = Usage()
        self._turns: dict[tuple[str, int], int] = {}

    def gateway(self, framework: str) -> AbstractAsyncContextManager[GatewaySession]:
        """This attempt's session on the job's recording gateway (framework runtimes, core.framework)."""
        if self._gateway is None:
            raise ContractError(f"the {framework} runtime needs the recording gateway, and this run has none")
        return self._gateway.session(self, framework)

    @property
    def calls_observed(self) -> int:
        return self.recorder.live_calls + self.recorder.replayed_calls

    @property
    def replayed_calls(self) -> int:
        return self.recorder.replayed_calls

    async def chat(self, *, role: str, member: int, messages: list[dict[str, Any]],
                   tools: Sequence[dict[str, Any]] | None = None, reads: Sequence[str] = (),
                   framework: str | None = None, requested: Sequence[tuple[str, str]] = ()) -> ChatReply:
        """One agent turn. `framework` names the runtime whose gateway made the request (None: a native topology);
        `requested` keeps the sampling parameters it asked for, which the protocol's decoding overrides."""
        turn = self._turns.get((role, member), 0)
        self._turns[(role, member)] = turn + 1
        site: AgentTurn
        if framework is None:
            site = AgentTurn(rollout_node=self.rollout_node, rollout_seed=self.rollout_seed, role=role,
                             member=member, turn=turn, reads=tuple(reads), seed_scheme=self.seed_scheme)
        else:
            site = GatewayTurn(rollout_node=self.rollout_node, rollout_seed=self.rollout_seed, role=role,
                               member=member, turn=turn, reads=tuple(reads), seed_scheme=self.seed_scheme,
                               framework=framework, requested=tuple(requested))
        body = request_body(self.pool.model_id, messages, self.decoding, tools,
                            omit=FRAMEWORK_OMITTED_PARAMS.get(framework or "", ()))
        call = await self.recorder.call(site, body)
        self.usage = self.usage + call.usage
        response = call.response
        return ChatReply(content=response["content"], tool_calls=tuple(response["tool_calls"]),
                         finish_reason=response["finish_reason"], node_id=call.node_id, turn=turn,
                         replayed=call.replayed_from is not None, usage=response["usage"])

    async def call_tool(self, *, role: str, member: int, node_id: str, call: dict[str, Any]) -> str:
        worker = f"{role}.{member}"
        args = call.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
        started = utc_now()
        # the call event is committed while the tool runs; the result event before the result is used
        called = self.recorder.record_tool_event(
            node_id=node_id, worker=worker, event_type=EventType.TOOL_CALL, turn_id=node_id,
            payload={"tool_name": call["name"], "tool_call_id": call.get("id"), "args": args},
            started=started, completed=started)
        result, is_error = await self._execute(call["name"], args)
        # the one scrub point of tool results, native and gateway alike: before they are recorded or shown to a
        # model (a tool's output may hold a secret value or a credential-shaped string)
        result = scrub(result, self.secrets)
        self.usage = self.usage + Usage(n_tool_calls=1)
        for commit in (called, self.recorder.record_tool_event(
                node_id=node_id, worker=worker, event_type=EventType.TOOL_RESULT, turn_id=None,
                payload={"tool_name": call["name"], "tool_call_id": call.get("id"), "content": result,
                         "is_error": is_error},
                started=started, completed=utc_now())):
            if commit is not None:
                await commit
        return result

    async def _execute(self, name: str, args: Any) -> tuple[str, bool]:
        if self.tool_executor is None:
            return f"tool {name!r} is not available", True
        try:
            return await self.tool_executor(name, args), False
        except InfrastructureError:  # a tool's backend is down (e.g. live Wikipedia): retried, never charged
            raise
        except Exception as exc:  # a tool failure is data for the model, not a crash
            return f"tool error: {type(exc).__name__}: {exc}", True
