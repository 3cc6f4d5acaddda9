"""The call site of a framework's turn through the recording gateway (engine.recorder's CallSite)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.canonical import content_hash
from engine.call_sites import AgentTurn


@dataclass(frozen=True)
class GatewayTurn(AgentTurn):
    """An agent turn a framework runtime made through the recording gateway (engine/gateway). Same seed and node
    as a native turn (the seed under the topology's member seed scheme, inherited from AgentTurn: a LangGraph
    Independent replica i sends rollout seed + i, section 2.2); replayed by its logical key (rollout, role, member,
    turn), because a framework's request may carry incidental differences, with the request's content hash kept to
    flag a divergence; the sampling parameters the framework asked for (overridden by the protocol's decoding) are
    kept in the payload."""

    framework: str = ""
    requested: tuple[tuple[str, str], ...] = ()  # (parameter, canonical JSON of the framework's value)

    def replay_key(self, body_sha256: str) -> str:
        return content_hash({"gateway_turn": [self.rollout_node, self.role, self.member, self.turn]})

    def payload(self, execution_id: str, body: dict[str, Any], response: dict[str, Any] | None) -> dict[str, Any]:
        return {**super().payload(execution_id, body, response), "framework": self.framework,
                "request_sha256": content_hash(body), "framework_params": dict(self.requested)}
