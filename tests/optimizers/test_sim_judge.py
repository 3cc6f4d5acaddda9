"""The simulated endpoint's judge (engine/sim/judge.py, SIMULATION): its documented rules, through the HTTP server,
and that they let a test predict what MAPRO's MAP step picks on a real job."""

from __future__ import annotations

import httpx
import pytest

from core.models import Row
from engine.sim.judge import SimJudge
from optimizers.mapro.prompts import blame_prompt, edge_judge_prompt, node_judge_prompt
from optimizers.mapro.roles import parse_blame, parse_score
from optimizers.maspo.prompts import pairwise_prompt
from optimizers.maspo.reward import verdict
from tests.conftest import start_sim
from tests.fakebench import FakeBench
from tests.optimizers.optjob import bench, read, run

ARITH, FMT = (m.remedy for m in FakeBench.failure_modes)
WRONG = "## Task\nq\n\n## Score\n0.0\n## Feedback\nWrong result 9 (arithmetic error)."
RIGHT = "## Task\nq\n\n## Score\n1.0\n## Feedback\nCorrect."


def judge() -> SimJudge:
    fake = FakeBench()
    rows = {r.id: r for r in fake.load_rows([f"q{i}" for i in range(38)])}
    return SimJudge(fake.failure_modes, lambda i: (fake, rows[i]) if i in rows else None)


@pytest.mark.parametrize("candidate,transcript,score", [
    ("Solve it.", WRONG, 4), (f"Solve it. {ARITH}", WRONG, 7), (f"Solve it. {FMT}", WRONG, 5),
    (f"{ARITH} {FMT}", WRONG, 8), (f"{ARITH} {FMT}", RIGHT, 6)])
def test_node_rule(candidate, transcript, score):
    assert parse_score(judge().reply(node_judge_prompt("solver", "", candidate, transcript, "probe"))) == score


@pytest.mark.parametrize("sender,receiver,score", [("a", "b", 4), (ARITH, "b", 4), (ARITH, ARITH, 6),
                                                   (f"{ARITH} {FMT}", f"{FMT} {ARITH}", 8)])
def test_edge_rule(sender, receiver, score):
    assert parse_score(judge().reply(edge_judge_prompt("s", "r", sender, receiver, [WRONG]))) == score


@pytest.mark.parametrize("prompt,transcript,blame", [("x", WRONG, 3), (ARITH, WRONG, 0), ("x", RIGHT, 0)])
def test_blame_rule(prompt, transcript, blame):
    assert parse_blame(judge().reply(blame_prompt("solver", "", prompt, transcript))) == blame


def test_pairwise_rule_scores_both_responses_against_gold():
    row: Row = FakeBench().load_rows(["q3"])[0]
    gold = row.gold["answer"]
    right, wrong = f"Answer: {gold}", f"Answer: {gold + 1}"
    j = judge()
    assert verdict(j.reply(pairwise_prompt("solver", "q3", "task", right, wrong)), "A") == 1.0
    assert verdict(j.reply(pairwise_prompt("solver", "q3", "task", right, wrong)), "B") == 0.0
    assert verdict(j.reply(pairwise_prompt("solver", "q3", "task", wrong, wrong)), "B") == 0.5
    assert verdict(j.reply(pairwise_prompt("solver", "nope", "task", right, wrong)), "A") == 0.5


def test_the_server_answers_judge_prompts_on_the_task_model():
    server = start_sim(bench())
    try:
        body = {"model": "test-model", "seed": 1, "temperature": 0.0,
                "messages": [{"role": "user", "content": node_judge_prompt("solver", "", ARITH, WRONG, "p")}]}
        reply = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10).json()
        assert parse_score(reply["choices"][0]["message"]["content"]) == 7 and reply["simulated"] is True
        assert server.log[-1]["kind"] == "judge"
    finally:
        server.stop()


def test_mapro_map_step_is_predicted_by_the_simulated_judge(tmp_path):
    server = start_sim(bench())
    try:
        run(tmp_path / "job", server.base_url, method="mapro", allow_any_cell=True)  # Single: off-grid for mapro
    finally:
        server.stop()
    out = tmp_path / "job"
    artifacts = read(out, "optimization/optimizer_result.json")["artifacts"]
    records = [r["record"] for r in read(out, "optimization/records.jsonl")]
    train = read(out, "optimization.json")["training_ids"]
    first3 = records[: len(train)][:3]  # the seed pass, in train order
    round1 = artifacts["events"][0]
    pool = round1["pools"]["solver"]
    j = judge()
    predicted = [sum(j.node(c, r["feedback"]) for r in first3) / 10 / 3 for c in pool]
    assert round1["node_potentials"]["solver"] == pytest.approx(predicted)
    best = max(range(len(pool)), key=lambda i: (predicted[i], -i))
    assert round1["assignment"] == {"solver": best}
