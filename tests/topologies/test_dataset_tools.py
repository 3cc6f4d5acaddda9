"""Each dataset's tool set and caps (protocol-v1 sections 2 and 10) as the topologies apply them: ToolHop's
Single loop of 9 turns plus the extra <answer> request, API-Bank's single call, SWE's 100 steps, python_exec for
the LCB/APPS coders, Independent's per-row wall-clock caps."""

from __future__ import annotations

from typing import Any, Sequence

import anyio
import pytest

import benchmarks.registry as registry
from core.models import Row
from core.topology import ChatReply
from tests.topologies.scripted import Call, ScriptedContext, fake, run, tool_call
from topologies.independent import Independent
from topologies.prompts import seed_bundle
from topologies.single import Single, step_limit


def single_bundle(task: str = "gpqa"):
    return seed_bundle("single", task, ["solver"])


# model calls: ToolHop's plain loop 9 turns, API-Bank one call; LangGraph recursion limit 25 (SWE 100) = 13 (50) calls
@pytest.mark.parametrize("dataset,limit", [("toolhop", 9), ("swe", 50), ("apibank", 1), ("gpqa", 13),
                                           ("hotpotqa", 13), ("math", 13), ("lcb", 13), ("apps", 13), ("bfcl", 13)])
def test_single_step_limits_per_dataset(dataset, limit):
    assert step_limit(registry.get_benchmark(dataset)) == limit


def test_toolhop_single_stops_at_9_turns_then_asks_once_for_the_answer():
    toolhop = registry.get_benchmark("toolhop")
    bench = fake("gpqa", tools=True)
    for fact in ("single_step_limit", "answer_marker", "answer_request"):
        setattr(bench, fact, getattr(toolhop, fact))

    def responder(call: Call):
        if call.last_user == toolhop.answer_request:
            return "<answer>42</answer>", ()
        return "thinking", [tool_call("calculator", expression="1+1")]  # never stops calling tools

    ctx = ScriptedContext(responder)
    out = run(Single(), ctx, bench, single_bundle())
    assert len(ctx.calls) == 10 and len(ctx.tool_calls) == 9  # 9 loop turns + the one answer request
    assert ctx.calls[-1].tools is None and ctx.calls[-1].last_user == toolhop.answer_request
    assert out.text == "<answer>42</answer>" and out.metadata["answer_request"] is True


def test_toolhop_single_makes_no_extra_request_when_the_tag_is_there():
    toolhop = registry.get_benchmark("toolhop")
    bench = fake("gpqa")
    for fact in ("single_step_limit", "answer_marker", "answer_request"):
        setattr(bench, fact, getattr(toolhop, fact))
    ctx = ScriptedContext(lambda c: ("<answer>7</answer>", ()))
    out = run(Single(), ctx, bench, single_bundle())
    assert len(ctx.calls) == 1 and "answer_request" not in out.metadata


@pytest.mark.parametrize("dataset", ["lcb", "apps"])
def test_coders_get_python_exec(dataset):
    bench = registry.get_benchmark(dataset)
    row = Row(id="0", dataset=dataset, task={"question": "q", "mode": "stdin"}, gold={})
    assert [t["function"]["name"] for t in bench.native_tools(row)] == ["python_exec"]

    async def call() -> tuple[str, str]:
        ran = await bench.call_tool(row, "python_exec", {"code": "print(int(input()) * 2)", "stdin": "21\n"})
        wrong = await bench.call_tool(row, "calculator", {"expression": "1"})
        return ran, wrong

    ran, wrong = anyio.run(call)
    assert "42" in ran and wrong.startswith("error: unknown tool")


class HangingMember(ScriptedContext):
    """Member `stuck` never gets a reply (a replica past the wall-clock cap)."""

    stuck = 3

    async def chat(self, *, role: str, member: int, messages: list[dict[str, Any]],
                   tools: Sequence[dict[str, Any]] | None = None, reads: Sequence[str] = ()) -> ChatReply:
        if member == self.stuck:
            await anyio.sleep_forever()
        return await super().chat(role=role, member=member, messages=messages, tools=tools, reads=reads)


@pytest.mark.parametrize("dataset,cap", [("gpqa", 120.0), ("hotpotqa", 120.0), ("math", 120.0), ("lcb", 180.0),
                                         ("apps", 180.0)])
def test_independent_wall_clock_caps_per_dataset(dataset, cap):
    assert registry.get_benchmark(dataset).independent_wall_clock_s == cap


def test_independent_replica_past_its_cap_abstains():
    bench = fake()
    bench.independent_wall_clock_s = 0.2  # type: ignore[attr-defined]
    answers = {0: "5", 1: "6", 2: "6"}
    ctx = HangingMember(lambda c: (f"Answer: {answers[c.member]}", ()))
    top = Independent(4)
    out = run(top, ctx, bench, seed_bundle("independent", "gpqa", top.roles("gpqa", 4)))
    assert out.metadata["timed_out_members"] == [3] and out.metadata["vote"]["abstentions"] == [3]
    assert out.text == "Answer: 6" and out.selected_member == 1


def test_single_loop_stops_at_its_limit_without_an_extra_request():
    ctx = ScriptedContext(lambda c: ("still working", [tool_call("calculator", expression="1+1")]))
    out = run(Single(), ctx, fake("gpqa", tools=True), single_bundle())
    assert len(ctx.calls) == 13 and len(ctx.tool_calls) == 13
    assert out.metadata["stop"] == "step_limit" and out.metadata["step_limit"] == 13
    assert "answer_request" not in out.metadata
