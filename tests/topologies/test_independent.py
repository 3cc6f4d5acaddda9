"""Independent: n concurrent replicas of one prompt, no edges between them, majority vote."""

from __future__ import annotations

import pytest

from core.cell import TEAM_SIZES
from core.contracts import CONTRACT_MARKER
from tests.topologies.scripted import Rendezvous, ScriptedContext, fake, run, tool_call
from topologies.independent import Independent
from topologies.prompts import seed_bundle


def bundle(task: str = "gpqa", n: int = 4):
    return seed_bundle("independent", task, Independent(n).roles(task, n))


@pytest.mark.parametrize("n", TEAM_SIZES)
def test_call_graph_replicas_run_concurrently_and_read_nothing(n):
    ctx = ScriptedContext(rendezvous=Rendezvous(n))  # completes only if all n first calls are in flight together
    out = run(Independent(n), ctx, fake("gpqa"), bundle("gpqa", n))
    assert sorted((c.role, c.member, c.turn) for c in ctx.calls) == [("solver", i, 0) for i in range(n)]
    assert ctx.max_in_flight == n
    assert all(c.reads == () for c in ctx.calls)
    first = ctx.calls[0].messages
    assert all(c.messages == first for c in ctx.calls)  # identical requests; only the member (seed) differs
    assert CONTRACT_MARKER in first[0]["content"]
    # default responder: member i answers i + 1, all buckets of size 1 -> tie -> member 0
    assert out.selected_member == 0 and out.text.endswith("Answer: 1")
    assert out.metadata["vote"]["tie"] is True and out.metadata["team_size"] == n


def test_majority_wins_and_tie_goes_to_lowest_member_bucket():
    answers = {0: "7", 1: "9", 2: "9", 3: "7", 4: "9"}

    def responder(call):
        return f"Answer: {answers[call.member]}", ()

    out = run(Independent(4), ScriptedContext(responder), fake(), bundle())
    assert out.selected_member == 0 and out.metadata["vote"]["tie"]  # 2 vs 2 -> bucket of member 0
    answers[0] = "no answer here"
    out = run(Independent(4), ScriptedContext(lambda c: (answers[c.member] if c.member == 0 else
                                                          f"Answer: {answers[c.member]}", ())), fake(), bundle())
    assert out.selected_member == 1 and out.metadata["vote"]["abstentions"] == [0]
    assert out.metadata["vote"]["buckets"] == [{"key": "9", "members": [1, 2]}, {"key": "7", "members": [3]}]


def test_all_abstain_selects_member_zero():
    out = run(Independent(2), ScriptedContext(lambda c: (f"nothing {c.member}", ())), fake(), bundle("gpqa", 2))
    assert out.selected_member == 0 and out.text == "nothing 0"
    assert out.metadata["vote"]["all_abstained"]


def test_tools_go_through_call_tool_per_replica():
    def responder(call):
        if call.turn == 0:
            return None, [tool_call("calculator", f"c{call.member}", expression="1+1")]
        return "Answer: 2", ()

    ctx = ScriptedContext(responder)
    out = run(Independent(2), ctx, fake("gpqa", tools=True), bundle("gpqa", 2))
    assert sorted((t["member"], t["node_id"]) for t in ctx.tool_calls) == [(0, "solver.0/t0"), (1, "solver.1/t0")]
    second = [c for c in ctx.calls if c.turn == 1]
    assert sorted(c.reads for c in second) == [("solver.0/t0",), ("solver.1/t0",)]
    assert second[0].messages[-1]["role"] == "tool" and out.text == "Answer: 2"
    assert out.metadata["last_tool_result"] == "result of calculator"  # ToolHop's scorer reads it


def test_bfcl_replicas_answer_with_native_tool_calls():
    bench = fake("bfcl", tools=True)
    ctx = ScriptedContext(lambda c: (None, [tool_call("calculator", "x", expression=str(c.member % 2))]))
    out = run(Independent(4), ctx, bench, bundle("bfcl"))
    assert len(ctx.calls) == 4 and ctx.tool_calls == []  # the calls are the answer, never executed
    assert out.tool_calls and out.selected_member == 0


def test_format_is_a_prompt_contract_only():
    ctx = ScriptedContext()
    out = run(Independent(2, "structured_soft"), ctx, fake(), bundle("gpqa", 2))
    assert "JSON_REPORT:" in ctx.calls[0].system
    assert out.metadata["communication_parse_rate"] == 0.0
    assert out.metadata["communication_inflight_handoffs"] == 0


def test_a_bundle_without_the_role_is_a_contract_error():
    from core.errors import ContractError
    from core.models import PromptBundle

    with pytest.raises(ContractError, match="no role 'solver'"):
        run(Independent(2), ScriptedContext(), fake(), PromptBundle(roles={"other": "x"}))
