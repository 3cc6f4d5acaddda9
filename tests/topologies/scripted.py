"""A scripted AgentContext double: records every chat/tool call and answers from a script.

Overlap between calls is observed with anyio events, never with timing: a `Rendezvous(k)` makes the first k
calls that reach it wait until all k have arrived, which only completes if they are in flight together.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from benchmarks.registry import KNOWN_BENCHMARKS, get_benchmark
from core.contracts import CONTRACT_MARKER
from core.topology import ChatReply
from tests.fakebench import FakeBench


# the dataset facts topologies once looked up by dataset name; a fake posing as that dataset declares them too
NAMED_FACTS = ("answer_is_native_call", "prompt_contract_only", "report_vocabulary")


@dataclass
class Call:
    role: str
    member: int
    turn: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    reads: tuple[str, ...]
    node_id: str

    @property
    def system(self) -> str:
        return str(self.messages[0]["content"])

    @property
    def answering(self) -> bool:
        return CONTRACT_MARKER in self.system

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools or []]

    @property
    def last_user(self) -> str:
        return next(str(m["content"]) for m in reversed(self.messages) if m["role"] == "user")


Reply = tuple[str | None, Sequence[dict[str, Any]]]
Responder = Callable[[Call], Reply]


def default_responder(call: Call) -> Reply:
    """Like the simulated endpoint: answering roles answer, the others write a note; no tool calls."""
    if call.answering:
        return f"Reasoned.\nAnswer: {call.member + 1}", ()
    return f"note from {call.role}.{call.member}", ()


class Rendezvous:
    """The first `k` calls wait until all `k` have arrived (deadlocks, hence fails under a guard, if serial)."""

    def __init__(self, k: int):
        self.k = k
        self.arrived = 0
        self.event = anyio.Event()

    async def wait(self) -> None:
        if self.arrived >= self.k:
            return
        self.arrived += 1
        if self.arrived == self.k:
            self.event.set()
        await self.event.wait()


@dataclass
class ScriptedContext:
    responder: Responder = default_responder
    rendezvous: Rendezvous | None = None
    tool_results: Callable[[str, dict[str, Any]], str] = lambda name, args: f"result of {name}"
    calls: list[Call] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    max_in_flight: int = 0
    _in_flight: int = 0
    _turns: dict[tuple[str, int], int] = field(default_factory=dict)

    async def chat(self, *, role: str, member: int, messages: list[dict[str, Any]],
                   tools: Sequence[dict[str, Any]] | None = None, reads: Sequence[str] = ()) -> ChatReply:
        turn = self._turns.get((role, member), 0)
        self._turns[(role, member)] = turn + 1
        node_id = f"{role}.{member}/t{turn}"
        call = Call(role, member, turn, copy.deepcopy(messages), copy.deepcopy(list(tools)) if tools else None,
                    tuple(reads), node_id)
        self.calls.append(call)
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self.rendezvous is not None:
                await self.rendezvous.wait()
            await anyio.lowlevel.checkpoint()
        finally:
            self._in_flight -= 1
        content, tool_calls = self.responder(call)
        return ChatReply(content=content, tool_calls=tuple(tool_calls), finish_reason="stop", node_id=node_id,
                         turn=turn)

    async def call_tool(self, *, role: str, member: int, node_id: str, call: dict[str, Any]) -> str:
        args = call.get("arguments")
        if isinstance(args, str):
            args = json.loads(args)
        self.tool_calls.append({"role": role, "member": member, "node_id": node_id, "name": call["name"],
                                "args": args})
        return self.tool_results(call["name"], args)

    def by(self, role: str) -> list[Call]:
        return [c for c in self.calls if c.role == role]


def tool_call(name: str, call_id: str = "c1", **args: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": json.dumps(args)}


CALC = {"type": "function", "function": {"name": "calculator", "description": "Evaluate an expression.",
                                         "parameters": {"type": "object",
                                                        "properties": {"expression": {"type": "string"}},
                                                        "required": ["expression"]}}}


def fake(name: str = "gpqa", tools: bool = False) -> FakeBench:
    """FakeBench posing as a dataset (so the dataset's team spec, native-call answers, hand-off re-rendering and
    report vocabulary apply), optionally with a calculator."""
    bench = FakeBench()
    bench.name = name  # type: ignore[misc]
    if name in KNOWN_BENCHMARKS:
        real = get_benchmark(name)
        for fact in NAMED_FACTS:
            setattr(bench, fact, getattr(real, fact))
    if tools:
        bench.native_tools = lambda row: [CALC]  # type: ignore[method-assign]
    return bench


def run(topology: Any, ctx: ScriptedContext, bench: FakeBench, bundle: Any, row_index: int = 0,
        guard: float = 10.0) -> Any:
    row = bench.load_rows([bench.splits().train[row_index]])[0]

    async def main() -> Any:
        with anyio.fail_after(guard):  # a deadlock guard, not a timing assertion
            return await topology.run(row, bundle, ctx, bench)

    return anyio.run(main)
