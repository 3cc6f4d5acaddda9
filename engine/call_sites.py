"""Call sites: where a recorded model call is made (engine.recorder's `CallSite`), which derives its seed, its
replay key, the card node it becomes and its own payload fields. An agent turn of a rollout (`AgentTurn`; a
framework's turn through the gateway subclasses it in engine/gateway/turn.py) or an uncharged component call of a
method (`ComponentCall`: reflection, judge, probe)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from core.canonical import content_hash, sha256_hex
from core.seeds import TURN_HASH_SCHEME, request_seed, turn_seed
from core.vocabulary import Actor


@dataclass(frozen=True)
class CallNode:
    """The card node a recorded call becomes."""

    node_id: str
    parent_id: str
    instance_key: str
    task_key: str
    worker_key: str
    level: int
    actor: str


class CallSite(Protocol):
    """Where a model call is made: it derives the seed, names the node and adds its own payload fields."""

    @property
    def reads(self) -> tuple[str, ...]: ...  # node ids whose output this call read (edges into its node)

    def seed(self, body: dict[str, Any]) -> int: ...

    def replay_key(self, body_sha256: str) -> str: ...  # the key a recorded call is replayed by, given the body's hash

    def node(self, execution_id: str, request_key: str) -> CallNode: ...

    def payload(self, execution_id: str, body: dict[str, Any], response: dict[str, Any] | None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class AgentTurn:
    """Call number `turn` of agent `role.member` inside one rollout attempt. Its seed: core.seeds.turn_seed under
    the topology's member seed scheme (replica i of an Independent team: rollout seed + i on every turn, section
    2.2; every other topology: core.seeds.call_seed of (rollout seed, role, member, turn))."""

    rollout_node: str
    rollout_seed: int
    role: str
    member: int
    turn: int
    reads: tuple[str, ...] = ()
    seed_scheme: str = TURN_HASH_SCHEME

    @property
    def worker(self) -> str:
        return f"{self.role}.{self.member}"

    def seed(self, body: dict[str, Any]) -> int:
        return turn_seed(self.seed_scheme, self.rollout_seed, self.role, self.member, self.turn)

    def replay_key(self, body_sha256: str) -> str:
        return body_sha256

    def node(self, execution_id: str, request_key: str) -> CallNode:
        return CallNode(node_id=f"{execution_id}/{self.worker}/t{self.turn}", parent_id=self.rollout_node,
                        instance_key=f"{self.worker}/t{self.turn}", task_key=self.role, worker_key=self.worker,
                        level=2, actor=Actor.AGENT)

    def payload(self, execution_id: str, body: dict[str, Any], response: dict[str, Any] | None) -> dict[str, Any]:
        return {"role": self.role, "member": self.member, "turn": self.turn, "attempt_execution": execution_id}


def prompt_text(messages: list[dict[str, Any]]) -> str:
    """What a component call's seed hashes: the one user message's text, else the hash of all messages."""
    return str(messages[0]["content"]) if len(messages) == 1 else content_hash(messages)


@dataclass(frozen=True)
class ComponentCall:
    """An uncharged call of a method (reflection / judge / probe, protocol-v1 s. 7, 8.3, 8.4). Seed (s. 5.5):
    request_seed(optimizer_seed, cell_id, component, key, sha256(prompt), purpose, 0)."""

    run_node: str
    component: str
    purpose: str
    key: str
    optimizer_seed: int
    cell_id: str
    reads: tuple[str, ...] = ()

    def seed(self, body: dict[str, Any]) -> int:
        return request_seed(self.optimizer_seed, self.cell_id, self.component, self.key,
                            sha256_hex(prompt_text(body["messages"])), self.purpose, 0)

    def replay_key(self, body_sha256: str) -> str:
        return body_sha256

    def node(self, execution_id: str, request_key: str) -> CallNode:
        return CallNode(node_id=f"{self.component}/{self.purpose}/{request_key[:16]}", parent_id=self.run_node,
                        instance_key=self.key, task_key=self.component, worker_key=self.component, level=1,
                        actor=Actor.of_component(self.component))

    def payload(self, execution_id: str, body: dict[str, Any], response: dict[str, Any] | None) -> dict[str, Any]:
        return {"component": self.component, "purpose": self.purpose, "logical_key": self.key,
                "prompt_sha256": sha256_hex(prompt_text(body["messages"])),
                "output_sha256": None if response is None else sha256_hex(response.get("content") or ""),
                "finish_reason": None if response is None else response.get("finish_reason"),
                "length_limited": response is not None and response.get("finish_reason") == "length"}
