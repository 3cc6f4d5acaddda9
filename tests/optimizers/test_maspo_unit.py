"""MASPO: reward arithmetic and fallbacks (table-driven), judge verdicts, beam and depth limits on doubles."""

from __future__ import annotations

import re

import anyio
import pytest

from optimizers.maspo import Maspo
from optimizers.maspo.reward import joint_reward, outcome, refresh_reward, verdict
from tests.optimizers.fakes import FakeRunner, rows, seed_bundle, transcript_of


@pytest.mark.parametrize("local,lookahead,glob,terminal,shared,rule,value", [
    (1.0, 1.0, 1.0, False, False, "joint", 0.5),            # 0.4 + 0.4 + 0.2 - 0.5
    (0.5, 0.5, 0.5, False, False, "joint", 0.0),            # identical candidate: ties everywhere
    (0.0, 1.0, 0.5, False, False, "joint", 0.4 + 0.1 - 0.5),
    (1.0, None, 0.0, False, False, "fallback", 0.7 - 0.5),  # no successor pair: 0.7 local + 0.3 global
    (0.5, None, 1.0, False, False, "fallback", 0.35 + 0.3 - 0.5),
    (None, None, 0.75, False, False, "fallback", 0.3 * 0.75 - 0.5),  # no judged item: local counts as a loss
    (1.0, 1.0, 0.25, True, False, "terminal", 0.25 - 0.5),  # terminal role: global - 0.5
    (1.0, 1.0, 1.0, False, True, "shared", 0.5),            # shared prompt: global credit only
])
def test_joint_reward_table(local, lookahead, glob, terminal, shared, rule, value):
    r = joint_reward(local=local, lookahead=lookahead, global_=glob, terminal=terminal, shared=shared)
    assert r.rule == rule and r.value == pytest.approx(value)


@pytest.mark.parametrize("local,glob,terminal,shared,value", [
    (1.0, 0.0, False, False, 0.2), (0.5, 0.5, False, False, 0.0), (1.0, 0.8, True, False, 0.3),
    (0.0, 1.0, False, True, 0.5)])
def test_refresh_reward_table(local, glob, terminal, shared, value):
    assert refresh_reward(local=local, global_=glob, terminal=terminal, shared=shared).value == pytest.approx(value)


@pytest.mark.parametrize("reply,candidate_is,value", [
    ("Winner: A", "A", 1.0), ("Winner: B", "A", 0.0), ("Winner: TIE", "B", 0.5), ("reasoning\nwinner: b", "B", 1.0),
    ("A is better", "A", 0.0), ("", "B", 0.0), ("Winner: C", "A", 0.0), ("Winner: A and B", "A", 0.0)])
def test_judge_verdicts_malformed_is_a_loss(reply, candidate_is, value):
    assert verdict(reply, candidate_is) == value


def test_global_outcome_is_win_tie_loss():
    assert (outcome(1, 0), outcome(1, 1), outcome(0, 0), outcome(0, 1)) == (1.0, 0.5, 0.5, 0.0)


class Model:
    def __init__(self, judge_reply="Winner: TIE"):
        self.calls = []
        self.judge_reply = judge_reply

    async def complete(self, messages, *, purpose, key, temperature=None, max_tokens=None):
        self.calls.append((purpose, key, temperature))
        text = messages[-1]["content"]
        if purpose == "maspo.proposal":
            cur = re.search(r"<current_instruction>\n(.*?)\n</current_instruction>", text, re.DOTALL).group(1)
            return f"```\n{cur}\nTip {len(self.calls)}.\n```"
        return self.judge_reply

    def usage(self):
        return {"model_calls": len(self.calls)}


def run_maspo(budget, roles=("solver",), score=None, **kw):
    train = rows("t", 20)
    runner = FakeRunner(budget, score or (lambda r, b, i: 0.0), roles=roles)
    model, judge = Model(), Model(kw.pop("judge_reply", "Winner: TIE"))
    method = Maspo(seed=2, reflection=model, judge=judge, **kw)
    result = anyio.run(method.optimize, runner, train, [], seed_bundle(roles), budget)
    return result, runner, model, judge


def test_depth_limit_stops_the_search_and_beam_never_exceeds_k():
    result, runner, model, _ = run_maspo(600, max_depth=2, steps_per_turn=1, minibatch=4)
    assert result.stop_reason == "maximum_search_depth"
    assert result.artifacts["depth"] == {"solver": 2}
    steps = [e for e in result.artifacts["events"] if "depth" in e]
    assert [e["depth"] for e in steps] == [1, 2]
    assert all(len(e["beam_rewards"]) <= 2 for e in steps)
    assert all(len(e["rows"]) == 4 for e in steps)
    # per step: (1 parent + 2 offspring) x 4 rows per beam member, at most 2 members
    assert runner.ledger.snapshot().charged <= 2 * 2 * 3 * 4
    assert all(t == 0.7 for p, _, t in model.calls if p == "maspo.proposal")


def test_budget_stop_and_the_smallest_budget_scores_one_candidate():
    result, runner, _, _ = run_maspo(20)
    assert result.stop_reason == "budget" and runner.ledger.snapshot().charged == 20
    assert len(result.artifacts["events"][0]["offspring"]) == 1
    assert Maspo().smallest_budget(150, 50) == 20


def test_terminal_role_is_credited_by_the_metric_and_the_better_offspring_enters_the_system():
    def score(row, bundle, it):  # a prompt with a tip solves every row; the seed solves none
        return 1.0 if "Tip" in bundle.roles["solver"] else 0.0

    result, _, _, judge = run_maspo(90, score=score)
    first = result.artifacts["events"][0]["offspring"][0]
    assert first["rule"] == "shared" and first["reward"] == pytest.approx(0.5)
    assert "Tip" in result.incumbent.roles["solver"]
    assert judge.calls == []  # shared prompt: global credit only, no judge call


def test_malformed_judge_reply_counts_as_a_loss_for_the_candidate():
    roles = ("analyzer", "caller")
    result, _, _, judge = run_maspo(60, roles=roles, judge_reply="I cannot decide.", max_depth=1, minibatch=4)
    first = result.artifacts["events"][0]
    assert first["role"] == "analyzer"
    # FakeRunner exposes no per-role outputs: no judged item, local counts as a loss -> fallback rule
    assert first["offspring"][0]["rule"] == "fallback"
    assert first["offspring"][0]["reward"] == pytest.approx(0.3 * 0.5 - 0.5)
    assert result.incumbent.roles["analyzer"] == seed_bundle(roles).roles["analyzer"]  # losers never win the beam


class OutputsRunner(FakeRunner):
    """FakeRunner whose rollouts have unique ids and per-role outputs (the SessionRunner view)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.outputs = {}

    async def run_batch(self, batch, bundle, iteration):
        records = await super().run_batch(batch, bundle, iteration)
        out = []
        for rec in records:
            rid = f"{rec.rollout_id}-{len(self.outputs)}"
            self.outputs[rid] = {r: f"{r} says {bundle.roles[r][-8:]}" for r in self.roles}
            out.append(rec.model_copy(update={"rollout_id": rid}))
        return out

    async def transcripts(self, records):
        return [transcript_of(rec.rollout_id, self.outputs[rec.rollout_id]) for rec in records]


@pytest.mark.anyio
@pytest.mark.parametrize("reply,rule,value", [("I cannot decide.", "joint", 0.2 * 0.5 - 0.5),
                                              ("Winner: TIE", "joint", 0.0)])
async def test_judge_reply_drives_local_and_lookahead_credit(reply, rule, value):
    roles = ("analyzer", "caller")
    runner = OutputsRunner(60, lambda r, b, i: 0.0, roles=roles)
    model, judge = Model(), Model(reply)
    result = await Maspo(seed=0, reflection=model, judge=judge, max_depth=1, minibatch=4).optimize(
        runner, rows("t", 8), [], seed_bundle(roles), 60)
    first = result.artifacts["events"][0]["offspring"][0]
    assert first["rule"] == rule and first["reward"] == pytest.approx(value)
    assert first["local"] == (0.0 if "cannot" in reply else 0.5)
    assert len([c for c in judge.calls if c[0] == "maspo.pairwise"]) >= 8  # own + successor output per item


class CountingJudge(Model):
    def __init__(self):
        super().__init__("Winner: TIE")
        self.level = self.peak = 0

    async def complete(self, messages, *, purpose, key, temperature=None, max_tokens=None):
        self.level += 1
        self.peak = max(self.peak, self.level)
        try:
            await anyio.sleep(0.002)
            return await super().complete(messages, purpose=purpose, key=key)
        finally:
            self.level -= 1


@pytest.mark.anyio
async def test_at_most_four_judge_calls_in_flight_across_concurrent_offspring():
    roles = ("a", "b", "c", "d")
    runner = OutputsRunner(600, lambda r, b, i: 0.0, roles=roles)
    judge = CountingJudge()
    result = await Maspo(seed=0, reflection=Model(), judge=judge, max_depth=2).optimize(
        runner, rows("t", 20), [], seed_bundle(roles), 600)
    assert result.stop_reason == "maximum_search_depth"
    assert len(judge.calls) > 4 and 1 < judge.peak <= 4
    assert all(len(e.get("beam_rewards", [])) <= 2 for e in result.artifacts["events"])
    assert result.artifacts["depth"] == {r: 2 for r in roles}
