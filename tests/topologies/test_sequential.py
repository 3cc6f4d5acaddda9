"""Sequential: stage k reads the task plus every earlier stage, only the last stage carries the contract."""

from __future__ import annotations

import pytest

from core.cell import TEAM_SIZES
from core.communication import parse_report
from tests.topologies.scripted import ScriptedContext, fake, run, tool_call
from topologies.prompts import seed_bundle
from topologies.sequential import Sequential
from topologies.teams import team_spec


def bundle(task: str, n: int):
    return seed_bundle("sequential", task, Sequential(n).roles(task, n))


@pytest.mark.parametrize("task", ["hotpotqa", "lcb"])
@pytest.mark.parametrize("n", TEAM_SIZES)
def test_call_graph(task, n):
    ctx = ScriptedContext()
    bench = fake(task)
    out = run(Sequential(n), ctx, bench, bundle(task, n))
    roles = [s.role for s in team_spec(task).stages(n)]
    assert [(c.role, c.member, c.turn) for c in ctx.calls] == [(r, 0, 0) for r in roles]
    task_text = bench.render_task(bench.load_rows([bench.splits().train[0]])[0])
    for k, call in enumerate(ctx.calls):
        assert call.reads == tuple(f"{r}.0/t0" for r in roles[:k])
        user = call.messages[1]["content"]
        assert task_text in user
        blocks = [f"PRIOR STAGE: {r}\nnote from {r}.0" for r in roles[:k]]
        positions = [user.index(b) for b in blocks]
        assert positions == sorted(positions)  # in order
        assert user.count("PRIOR STAGE:") == k
        assert call.answering == (k == n - 1)
    assert out.text == "Reasoned.\nAnswer: 1" and out.metadata["stages"] == roles


def test_tool_stage_loops_and_other_stages_are_single_calls():
    def responder(call):
        if call.role == "retriever" and call.turn == 0:
            return None, [tool_call("calculator", expression="2")]
        return ("Answer: 5", ()) if call.answering else (f"note {call.role} t{call.turn}", ())

    ctx = ScriptedContext(responder)
    out = run(Sequential(4), ctx, fake("hotpotqa", tools=True), bundle("hotpotqa", 4))
    assert out.metadata["last_tool_result"] == "result of calculator"
    assert [(c.role, c.turn) for c in ctx.calls] == [("planner", 0), ("retriever", 0), ("retriever", 1),
                                                     ("reasoner", 0), ("writer", 0)]
    assert [c.tool_names for c in ctx.calls] == [[], ["calculator"], ["calculator"], [], []]
    assert ctx.calls[2].reads == ("retriever.0/t0",)
    # the retriever's last node is what later stages read
    assert ctx.calls[3].reads == ("planner.0/t0", "retriever.0/t1")
    assert "PRIOR STAGE: retriever\nnote retriever t1" in ctx.calls[3].last_user
    assert [t["node_id"] for t in ctx.tool_calls] == ["retriever.0/t0"]


def test_handoffs_are_rerendered_into_the_format():
    ctx = ScriptedContext()
    out = run(Sequential(2, "semi_structured"), ctx, fake("gpqa"), bundle("gpqa", 2))
    user = ctx.calls[1].last_user
    block = user.split("PRIOR STAGE: solver\n", 1)[1]
    assert parse_report(block, "semi_structured").ok and "note from solver.0" in block
    assert "[EVIDENCE_OR_TESTS]" in ctx.calls[0].system
    meta = out.metadata
    assert meta["communication_render_parse_rate"] == 1.0 and meta["communication_inflight_handoffs"] == 1
    assert meta["communication_parse_rate"] == 0.0 and meta["communication_all_parse_ok"] is False


def test_bfcl_stages_answer_through_the_text_contract_without_native_tools():
    ctx = ScriptedContext()
    run(Sequential(4), ctx, fake("bfcl", tools=True), bundle("bfcl", 4))
    assert all(c.tools is None for c in ctx.calls)
