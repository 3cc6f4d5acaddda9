"""TAVO's pure parts: sub-trajectory segmentation (table-driven over the turn shapes every topology records, and
on a transcript recorded by a real centralized job), Eq.-3 credit, the gate arithmetic and the stop rules."""

from __future__ import annotations

import anyio
import pytest

from core.transcript import ToolReply, Transcript, Turn
from core.vocabulary import StopReason
from optimizers.tavo.credit import eq3_credit, parse_scores, quality
from optimizers.tavo.gate import Gate, adopt, smallest_budget, validation_size
from optimizers.tavo.segments import segments


def t(role: str, turn: int, member: int = 0, tools: int = 0, attempt: str = "r#a1") -> Turn:
    return Turn(role=role, member=member, turn=turn, attempt=attempt, messages=(), reply=f"{role}{member}.{turn}",
                tool_calls=tuple({"name": "search"} for _ in range(tools)),
                tool_replies=tuple(ToolReply("search", "page") for _ in range(tools)))


# topology -> recorded turn order -> expected sub-trajectories as (role, member, turn) lists
CASES = {
    "single (ReAct: each turn + its tool replies)": (
        [t("solver", 0, tools=1), t("solver", 1, tools=1), t("solver", 2)],
        [[("solver", 0, 0)], [("solver", 0, 1)], [("solver", 0, 2)]]),
    "independent (4 replicas, one turn each)": (
        [t("caller", 0, m) for m in range(4)], [[("caller", m, 0)] for m in range(4)]),
    "sequential (4 stages)": (
        [t("analyzer", 0), t("inspector", 0, tools=2), t("caller", 0), t("verifier", 0)],
        [[("analyzer", 0, 0)], [("inspector", 0, 0)], [("caller", 0, 0)], [("verifier", 0, 0)]]),
    "centralized (manager turn + everything until the next)": (
        [t("manager", 0), t("caller", 0, tools=1), t("caller", 1), t("manager", 1), t("validator_worker", 0),
         t("manager", 2)],
        [[("manager", 0, 0), ("caller", 0, 0), ("caller", 0, 1)], [("manager", 0, 1), ("validator_worker", 0, 0)],
         [("manager", 0, 2)]]),
    "centralized report round (workers report, then the manager)": (
        [t("planner", 0), t("caller", 0), t("validator_worker", 0), t("manager", 0)],
        [[("planner", 0, 0)], [("caller", 0, 0)], [("validator_worker", 0, 0)], [("manager", 0, 0)]]),
    "decentralized (4 peers x 2 rounds)": (
        [t("debater", r, m) for r in range(2) for m in range(4)],
        [[("debater", m, r)] for r in range(2) for m in range(4)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_segmentation_of_every_topology(name):
    turns, expected = CASES[name]
    found = segments(Transcript("r", tuple(turns)))
    assert [[(x.role, x.member, x.turn) for x in s.turns] for s in found] == expected
    assert [s.index for s in found] == list(range(len(expected)))
    for s in found:  # each turn's tool replies stay with it
        assert all(x.tool_replies == turns[turns.index(x)].tool_replies for x in s.turns)


def test_only_the_last_attempt_is_cut_and_the_lead_role_comes_first():
    turns = (t("manager", 0, attempt="r#a1"), t("manager", 0, attempt="r#a2"), t("caller", 0, attempt="r#a2"))
    found = segments(Transcript("r", turns))
    assert len(found) == 1 and found[0].roles == ("manager", "caller")
    assert all(x.attempt == "r#a2" for x in found[0].turns)
    assert "[caller#0 turn 0] caller0.0" in found[0].render()


@pytest.mark.slow
@pytest.mark.anyio
async def test_segmentation_of_a_recorded_centralized_transcript(tmp_path):
    from engine.store import Store
    from tests.optimizers.tavo.test_tavo_jobs import cfg_for
    from engine.job.run_job import run_job

    out = tmp_path / "job"
    await run_job(cfg_for(out, "task=bfcl,topology=centralized,team_size=4", budget=12))
    import json
    first = json.loads((out / "optimization" / "records.jsonl").read_text().splitlines()[0])["record"]
    async with Store(out / "card.sqlite", run_id="check") as store:
        (transcript,) = await store.transcripts([first["rollout_id"]])
    found = segments(transcript)
    # the simulated manager delegates once, the worker answers, the manager answers: two sub-trajectories
    assert [s.roles[0] for s in found] == ["manager", "manager"] and len(found[0].roles) == 2
    assert sum(len(s.turns) for s in found) == len(transcript.final_attempt())


def test_judge_scores_and_eq3_credit():
    assert parse_scores("Progress: 9\nCoordination: 12\nStage: 0") == (9, 10, 1)
    assert parse_scores("no idea") == (5, 5, 5)  # malformed: neutral
    assert quality((1, 1, 1)) == 0.0 and quality((10, 10, 10)) == 1.0
    assert eq3_credit([1.0, 0.5], 1.0) == pytest.approx(0.75)  # solved: credit in [0, 1]
    assert eq3_credit([0.2], 0.0) == pytest.approx(-0.8)  # failed: the worst-rated step carries the blame


@pytest.mark.parametrize("budget,n_val,size", [(600, 50, 50), (600, 200, 95), (12, 50, 3), (100, 50, 11),
                                               (12, 2, 2)])
def test_validation_batch_size(budget, n_val, size):
    assert validation_size(budget, n_val) == size


def test_smallest_budget_and_adoption_margin():
    assert smallest_budget(150, 50) == 12 and smallest_budget(4, 2) == 8
    assert adopt(0.51, 0.5, 0.5) and not adopt(0.509, 0.5, 0.5)  # >= seed + 0.01
    assert not adopt(0.6, 0.5, 0.7) and adopt(0.7, 0.5, 0.7)  # not below the best adopted
    assert not adopt(None, 0.5, 0.5)


def play(outcomes, per_attempt=10, remaining=10**6):
    gate, played = Gate(per_attempt=per_attempt), []
    outcomes = iter(outcomes)
    while (stop := gate.next_attempt(remaining)) is None:
        played.append((gate.round, gate.attempt))
        gate.record(next(outcomes))
        remaining -= per_attempt
    return played, stop


def test_a_rejected_round_is_retried_and_two_rejected_rounds_stop():
    played, stop = play([False, True, False, False, False, False])
    assert played == [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)] and stop == StopReason.PATIENCE


def test_an_adoption_resets_the_rejection_count_and_five_rounds_is_the_most():
    played, stop = play([True, False, False, True, False, True, True])
    assert [r for r, _ in played] == [1, 2, 2, 3, 4, 4, 5] and stop == StopReason.MAX_ROUNDS


def test_a_round_starts_only_if_it_fits():
    played, stop = play([False, False, True], per_attempt=56, remaining=56 * 2 + 55)
    assert played == [(1, 1), (1, 2)] and stop == StopReason.BUDGET
