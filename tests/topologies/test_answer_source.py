"""The final answer comes from the role protocol-v1 section 2 names, for each of the five topologies:
Single - the agent's final message; Independent - the majority vote; Sequential - the last stage;
Centralized - the manager's final message (a missing answer stays missing: never a worker's);
Decentralized - the final-round majority vote. Every other agent answers something else, so a wrong source
shows up as a wrong text."""

from __future__ import annotations

import pytest

from tests.topologies.scripted import Call, ScriptedContext, fake, run, tool_call
from topologies.centralized import Centralized
from topologies.decentralized import Decentralized
from topologies.independent import Independent
from topologies.prompts import seed_bundle
from topologies.sequential import Sequential
from topologies.single import Single


def bundle(topology: object, name: str, task: str = "gpqa", n: int = 4):
    return seed_bundle(name, task, topology.roles(task, n))  # type: ignore[attr-defined]


def test_single_answer_is_the_agents_final_message():
    def responder(call: Call):
        if call.turn == 0:
            return "Let me compute.\nAnswer: 1", [tool_call("calculator", expression="2+2")]
        return "Answer: 4 (final message)", ()

    ctx = ScriptedContext(responder)
    out = run(Single(), ctx, fake("gpqa", tools=True), bundle(Single(), "single", n=1))
    assert out.text == "Answer: 4 (final message)" and len(ctx.calls) == 2


def test_independent_answer_is_the_majority_members_output():
    answers = {0: "7", 1: "9", 2: "9", 3: "5"}
    top = Independent(4)
    out = run(top, ScriptedContext(lambda c: (f"Answer: {answers[c.member]} from member {c.member}", ())),
              fake(), bundle(top, "independent"))
    assert out.text == "Answer: 9 from member 1" and out.selected_member == 1
    assert out.metadata["vote"]["winner_key"] == "9"


@pytest.mark.parametrize("last_answers", [True, False])
def test_sequential_answer_is_the_last_stage(last_answers):
    top = Sequential(4)
    stages = top.roles("gpqa", 4)

    def responder(call: Call):
        if call.role == stages[-1]:
            return ("Answer: 4 from the last stage" if last_answers else "I am not sure."), ()
        return f"Answer: 1 from {call.role}", ()

    out = run(top, ScriptedContext(responder), fake(), bundle(top, "sequential"))
    assert out.text == ("Answer: 4 from the last stage" if last_answers else "I am not sure.")


@pytest.mark.parametrize("manager_answers", [True, False])
def test_centralized_answer_is_the_managers_final_message_only(manager_answers):
    top = Centralized(4)

    def responder(call: Call):
        if call.role == "manager":
            if call.turn == 0:
                return None, [tool_call("delegate_to_solver_worker", task="solve it")]
            return ("Answer: 2 decided by the manager\nTERMINATE" if manager_answers
                    else "The team could not agree.\nTERMINATE"), ()
        return f"Answer: 8 from {call.role}", ()

    ctx = ScriptedContext(responder)
    out = run(top, ctx, fake(), bundle(top, "centralized"))
    assert [c.role for c in ctx.calls] == ["manager", "solver_worker", "manager"]
    assert out.metadata["answer_source"] == "manager"
    if manager_answers:
        assert out.text.strip() == "Answer: 2 decided by the manager"
        assert "no_valid_answer" not in out.metadata
    else:  # a semantic failure; the worker's answer is not promoted
        assert out.text.strip() == "The team could not agree." and out.metadata["no_valid_answer"] is True
        assert "8" not in out.text


def test_decentralized_answer_is_the_final_round_vote():
    top = Decentralized(4)

    def responder(call: Call):
        if call.turn == 0:  # round 0: everybody says 3
            return f"Answer: 3 round 0 peer {call.member}", ()
        return f"Answer: {6 if call.member in (2, 3) else call.member + 10} final peer {call.member}", ()

    ctx = ScriptedContext(responder)
    out = run(top, ctx, fake(), bundle(top, "decentralized"))
    assert max(c.turn for c in ctx.calls) == 1  # two rounds
    assert out.text == "Answer: 6 final peer 2" and out.selected_member == 2


@pytest.mark.parametrize("dataset", ["toolhop", "apibank"])
@pytest.mark.parametrize("manager_answers", [True, False])
def test_centralized_report_round_answer_is_the_managers_one_message(dataset, manager_answers):
    """Section 2.4: ToolHop / API-Bank centralized - each worker runs once, the manager reads the reports and
    answers; its message is the answer even when a worker stated one."""
    top = Centralized(4)
    workers = top.roles(dataset, 4)[1:]

    def responder(call: Call):
        if call.role == "manager":
            return ("Answer: 2 decided by the manager" if manager_answers else "No conclusion."), ()
        return f"Answer: 8 from {call.role}", ()

    ctx = ScriptedContext(responder)
    out = run(top, ctx, fake(dataset), bundle(top, "centralized", task=dataset))
    assert [c.role for c in ctx.calls] == [*workers, "manager"]
    manager = ctx.calls[-1]
    assert manager.tools is None and set(manager.reads) == {c.node_id for c in ctx.calls[:-1]}
    assert all(f"[{w}]:\nAnswer: 8 from {w}" in manager.last_user for w in workers)
    assert out.metadata["mode"] == "report_round" and out.metadata["answer_source"] == "manager"
    if manager_answers:
        assert out.text == "Answer: 2 decided by the manager"
    else:
        assert out.text == "No conclusion." and out.metadata["no_valid_answer"] is True
