"""Decentralized: round 0 alone, later rounds read the other peers' previous answers, final-round vote."""

from __future__ import annotations

import pytest

from core.cell import TEAM_SIZES
from tests.topologies.scripted import Rendezvous, ScriptedContext, fake, run, tool_call
from topologies.decentralized import Decentralized
from topologies.prompts import seed_bundle

BUNDLE = seed_bundle("decentralized", "gpqa", ["debater"])


@pytest.mark.parametrize("n", TEAM_SIZES)
def test_call_graph_two_rounds(n):
    ctx = ScriptedContext(rendezvous=Rendezvous(n))  # round 0 peers must be in flight together
    out = run(Decentralized(n), ctx, fake(), BUNDLE)
    assert len(ctx.calls) == 2 * n and ctx.max_in_flight == n
    assert sorted((c.member, c.turn) for c in ctx.calls) == sorted((m, t) for m in range(n) for t in (0, 1))
    round0, round1 = ctx.calls[:n], ctx.calls[n:]
    assert all(c.turn == 0 and c.reads == () and len(c.messages) == 2 for c in round0)
    assert all(c.turn == 1 for c in round1)
    for call in round1:
        m = call.member
        assert call.reads == tuple(f"debater.{j}/t0" for j in range(n) if j != m)
        assert [x["role"] for x in call.messages] == ["system", "user", "assistant", "user"]
        assert call.messages[2]["content"] == f"Reasoned.\nAnswer: {m + 1}"  # its own previous answer
        peers = call.messages[3]["content"]
        assert f"PEER {m}:" not in peers
        assert all(f"PEER {j}:\nReasoned.\nAnswer: {j + 1}" in peers for j in range(n) if j != m)
        assert call.answering
    assert out.selected_member == 0 and out.metadata["rounds"] == 2 and out.metadata["vote"]["tie"]


def test_round_one_peers_also_run_concurrently():
    n = 4
    ctx = ScriptedContext()
    ctx.rendezvous = None

    class SecondRound(Rendezvous):
        async def wait(self) -> None:
            if len(ctx.calls) > n:
                await super().wait()

    ctx.rendezvous = SecondRound(n)
    run(Decentralized(n), ctx, fake(), BUNDLE)
    assert ctx.rendezvous.arrived == n


def test_final_round_vote_with_tie_rule():
    final = {0: "Answer: 3", 1: "Answer: 5", 2: "Answer: 5", 3: "nothing"}

    def responder(call):
        return (f"Answer: {call.member}" if call.turn == 0 else final[call.member]), ()

    out = run(Decentralized(4), ScriptedContext(responder), fake(), BUNDLE)
    assert out.selected_member == 1 and out.text == "Answer: 5"
    assert out.metadata["vote"]["abstentions"] == [3]


def test_rounds_override_and_format_rerendering():
    ctx = ScriptedContext()
    out = run(Decentralized(2, "structured_soft", rounds=3), ctx, fake(), BUNDLE)
    assert len(ctx.calls) == 6
    last = [c for c in ctx.calls if c.turn == 2][0]
    assert last.messages[-1]["content"].count("JSON_REPORT:") == 1
    assert out.metadata["communication_inflight_handoffs"] == 4  # 2 peers x 2 later rounds
    assert out.metadata["communication_render_parse_rate"] == 1.0


def test_peers_use_tools_in_each_round_and_later_rounds_read_their_last_node():
    def responder(call):
        if call.messages[-1]["role"] == "user" and call.turn in (0, 2):
            return None, [tool_call("calculator", f"c{call.member}{call.turn}", expression="1")]
        return f"Answer: {call.member}", ()

    ctx = ScriptedContext(responder)
    out = run(Decentralized(2), ctx, fake("gpqa", tools=True), BUNDLE)
    assert sorted((c.member, c.turn) for c in ctx.calls) == [(m, t) for m in (0, 1) for t in range(4)]
    peer0_round1 = [c for c in ctx.calls if c.member == 0 and c.turn == 2][0]
    assert peer0_round1.reads == ("debater.1/t1",)  # the other peer's last round-0 node
    assert len(ctx.tool_calls) == 4 and out.metadata["last_tool_result"] == "result of calculator"
