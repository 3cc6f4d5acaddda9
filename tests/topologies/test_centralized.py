"""Centralized: manager -> one worker at a time -> manager, TERMINATE or the turn cap ends the run."""

from __future__ import annotations

import pytest

from core.cell import TEAM_SIZES
from core.communication import parse_report
from core.contracts import CONTRACT_MARKER
from tests.topologies.scripted import ScriptedContext, fake, run, tool_call
from topologies.centralized import NUDGE, Centralized
from topologies.prompts import seed_bundle
from topologies.teams import team_spec


def bundle(task: str = "gpqa", n: int = 4):
    return seed_bundle("centralized", task, Centralized(n).roles(task, n))


def manager_script(*replies):
    """Manager replies by manager turn; workers answer like the simulated endpoint."""

    def responder(call):
        if call.role.startswith("manager"):
            return replies[min(call.turn, len(replies) - 1)]
        return (f"Answer: 3 from {call.role}" if call.answering else f"report of {call.role}"), ()

    return responder


def test_delegation_round_trip_and_terminate():
    ctx = ScriptedContext(manager_script(
        ("Let me ask the analyzer.", [tool_call("delegate_to_analyzer_worker", "d1", task="list the principles")]),
        (None, [tool_call("delegate_to_solver_worker", "d2", task="pick one")]),
        ("Reasoned.\nAnswer: 4\nTERMINATE", ()),
    ))
    bench = fake("gpqa", tools=True)
    out = run(Centralized(4), ctx, bench, bundle())
    assert [(c.role, c.turn) for c in ctx.calls] == [("manager", 0), ("analyzer_worker", 0), ("manager", 1),
                                                     ("solver_worker", 0), ("manager", 2)]
    m0, a0, m1, s0, m2 = ctx.calls
    assert m0.tool_names == ["delegate_to_analyzer_worker", "delegate_to_solver_worker",
                             "delegate_to_verifier_worker", "calculator"]
    schema = m0.tools[0]["function"]
    assert schema["parameters"]["required"] == ["task"] and "analyzer_worker" in schema["description"]
    assert m0.answering and "TERMINATE" in m0.system and "analyzer_worker, solver_worker, verifier_worker" in m0.system
    assert m0.system.index(CONTRACT_MARKER) < m0.system.index("TERMINATE")  # the extension is outside the editable text
    assert not a0.answering and s0.answering  # answer-producing workers carry the contract
    assert a0.tool_names == ["calculator"]
    # workers see the shared conversation and the manager's instruction
    assert "Let me ask the analyzer." in a0.last_user and "list the principles" in a0.last_user
    assert "report of analyzer_worker" in s0.last_user and "pick one" in s0.last_user
    assert a0.reads == ("manager.0/t0",) and s0.reads == ("manager.0/t0", "analyzer_worker.0/t0", "manager.0/t1")
    # the worker's report returns to the manager as the delegate call's tool result
    assert m1.messages[-1] == {"role": "tool", "tool_call_id": "d1", "content": "report of analyzer_worker"}
    assert m1.reads == ("manager.0/t0", "analyzer_worker.0/t0")
    assert m2.reads == ("manager.0/t1", "solver_worker.0/t0")
    assert out.text == "Reasoned.\nAnswer: 4"
    meta = out.metadata
    assert meta["stop"] == "terminate" and meta["turns"] == 5 and "stop_reason" not in meta
    assert meta["delegations"] == ["analyzer_worker", "solver_worker"] and meta["answer_source"] == "manager"


@pytest.mark.parametrize("n", TEAM_SIZES)
def test_turn_cap_when_the_manager_never_terminates(n):
    ctx = ScriptedContext(manager_script(("Reasoned.\nAnswer: 2", ())))
    out = run(Centralized(n), ctx, fake(), bundle("gpqa", n))
    cap = team_spec("gpqa").centralized(n).max_turns
    assert cap == (8 if n == 2 else 16)
    assert len(ctx.calls) == cap and all(c.role.startswith("manager") for c in ctx.calls)
    assert len(ctx.calls[0].tools) == n - 1  # one delegate tool per worker (FakeBench has no native tools)
    assert ctx.calls[1].messages[-1] == {"role": "user", "content": NUDGE}
    assert ctx.calls[1].reads == (f"{ctx.calls[0].role}.0/t0",)
    assert out.metadata["stop"] == "turn_cap" and "turn cap of" in out.metadata["stop_reason"]
    assert out.text == "Reasoned.\nAnswer: 2"


def test_worker_calls_count_toward_the_cap():
    ctx = ScriptedContext(manager_script((None, [tool_call("delegate_to_solver_worker", task="again")])))
    out = run(Centralized(2), ctx, fake(), bundle("gpqa", 2))
    assert [c.role for c in ctx.calls] == ["manager", "solver_worker"] * 4
    assert out.metadata["turns"] == 8 and out.metadata["stop"] == "turn_cap"
    # the manager never answered: no answer (semantic failure); a worker's answer is never promoted (section 2)
    assert out.text is None and out.metadata["answer_source"] == "manager"
    assert out.metadata["no_valid_answer"] is True


def test_nonexistent_worker_is_a_tool_error_not_a_crash():
    ctx = ScriptedContext(manager_script(
        (None, [tool_call("delegate_to_ghost_worker", "g1", task="boo")]),
        ("I give up. TERMINATE", ()),
    ))
    out = run(Centralized(4), ctx, fake(), bundle())
    assert [c.role for c in ctx.calls] == ["manager", "manager"]
    result = ctx.calls[1].messages[-1]
    assert result["role"] == "tool" and "no worker named 'ghost_worker'" in result["content"]
    assert out.metadata["invalid_delegations"] == [{"manager_turn": 0, "tool": "delegate_to_ghost_worker"}]
    assert out.metadata["no_valid_answer"] is True and out.text == "I give up."


def test_one_worker_at_a_time():
    ctx = ScriptedContext(manager_script(
        (None, [tool_call("delegate_to_analyzer_worker", "a", task="x"),
                tool_call("delegate_to_verifier_worker", "b", task="y")]),
        ("Answer: 1 TERMINATE", ()),
    ))
    out = run(Centralized(4), ctx, fake(), bundle())
    assert [c.role for c in ctx.calls] == ["manager", "analyzer_worker", "manager"]
    results = [m for m in ctx.calls[2].messages if m["role"] == "tool"]
    assert [r["tool_call_id"] for r in results] == ["a", "b"]
    assert "one worker at a time" in results[1]["content"]
    assert out.text == "Answer: 1"


def test_manager_tools_run_through_call_tool():
    ctx = ScriptedContext(manager_script(
        (None, [tool_call("calculator", "k", expression="6*7")]),
        ("Answer: 42\nTERMINATE", ()),
    ))
    out = run(Centralized(4), ctx, fake("gpqa", tools=True), bundle())
    assert ctx.tool_calls == [{"role": "manager", "member": 0, "node_id": "manager.0/t0", "name": "calculator",
                               "args": {"expression": "6*7"}}]
    assert ctx.calls[1].messages[-1]["content"] == "result of calculator" and out.text == "Answer: 42"
    assert out.metadata["last_tool_result"] == "result of calculator"


def test_worker_reports_are_rerendered_for_the_manager():
    ctx = ScriptedContext(manager_script(
        (None, [tool_call("delegate_to_analyzer_worker", "d", task="go")]),
        ("Answer: 1\nTERMINATE", ()),
    ))
    out = run(Centralized(4, "structured_soft"), ctx, fake(), bundle())
    result = ctx.calls[2].messages[-1]["content"]
    assert parse_report(result, "structured_soft").ok and "report of analyzer_worker" in result
    assert out.metadata["communication_render_parse_rate"] == 1.0


def test_large_teams_use_the_r8_r10_manager_prompts():
    for n, manager in ((8, "manager_r8"), (10, "manager_r10")):
        ctx = ScriptedContext(manager_script(("Answer: 1 TERMINATE", ())))
        run(Centralized(n), ctx, fake("hotpotqa"), bundle("hotpotqa", n))
        assert ctx.calls[0].role == manager and len(ctx.calls[0].tools) == n - 1
