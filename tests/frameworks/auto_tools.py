"""A gpqa-like fake benchmark with one executed tool (`add`), and a simulated model whose tool-holding workers
call it once before reporting: exercises the dataset tools of the centralized runtimes (AutoGen's go through the
gateway's call_tool)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.models import Row
from core.simulation import SimReply
from engine.sim.policy import Decision, Match, Policy
from engine.sim.request_text import offered_tool_names
from engine.sim.server import SimServer
from tests.engine.faults.matrix import small_bench
from tests.fakebench import FakeBench

ADD = {"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"]}}}
ADD_CALL = {"name": "add", "arguments": {"a": 2, "b": 3}}


class AddBench(FakeBench):
    executes_tools = True

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return [ADD]

    async def call_tool(self, row: Row, name: str, arguments: Any) -> str:
        if name != "add":
            raise ValueError(f"no tool {name!r}")
        return str(int(arguments["a"]) + int(arguments["b"]))


def add_bench() -> AddBench:
    base = small_bench()
    bench = AddBench(n_train=6, n_validation=4, n_test=6)
    bench.name = base.name  # type: ignore[misc]  # the gpqa team spec applies
    return bench


class ScriptedPolicy(Policy):
    """The simulated model, plus: a worker offered `add` (and no delegate tools) calls it once, then reports
    ("Done."); a manager delegates to its first `delegations` offered workers in turn before it answers."""

    def __init__(self, bench: FakeBench, delegations: int = 1) -> None:
        super().__init__({"fake": (bench, policy_rows(bench))}, model_ids=("test-model",))
        self.delegations = delegations

    def decide(self, body: Mapping[str, Any], match: Match | None | bool = False) -> Decision:
        names = offered_tool_names(body)
        messages = body.get("messages") or []
        delegates = [n for n in names if n.startswith("delegate_to_")]
        if "add" in names and not delegates and messages and messages[-1].get("role") != "tool":
            return Decision("tool_call", SimReply(content=None, tool_calls=(ADD_CALL,)))
        done = sum(1 for m in messages if m.get("role") == "assistant" for c in (m.get("tool_calls") or [])
                   if str(c.get("function", {}).get("name", "")).startswith("delegate_to_"))
        if delegates and 0 < done < min(self.delegations, len(delegates)):
            call = {"name": delegates[done], "arguments": {"task": f"Step {done + 1}: check and report back."}}
            return Decision("delegate", SimReply(content=None, tool_calls=(call,)))
        return super().decide(body, match)


def start_scripted_sim(bench: FakeBench, delegations: int = 1) -> SimServer:
    server = SimServer(ScriptedPolicy(bench, delegations))
    server.start()
    return server


def policy_rows(bench: FakeBench) -> list[Row]:
    s = bench.splits()
    return bench.load_rows([*s.train, *s.validation, *s.test])
