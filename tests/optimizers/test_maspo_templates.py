"""MASPO's role-aware templates (protocol 8.4: "role-aware templates (MATH uses upstream templates)"): MATH gets
the MATH template for the role's place in the graph, every other dataset exactly the generic rendering; a MATH job
on the real MATH loader, scorer and simulation hooks records MATH-template reflection and judge requests."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import anyio
import pytest

from benchmarks.math import BENCHMARK
from core.models import Row
from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job
from engine.runner import RetryPolicy
from engine.sim.judge import SimJudge
from engine.sim.policy import Policy
from engine.sim.server import SimServer
from optimizers.mapro.roles import role_graph
from optimizers.maspo import Maspo
from optimizers.maspo.prompts import OUTPUT_CHARS, PROBLEM_CHARS, Trace, pairwise_prompt, proposal_prompt
from optimizers.maspo.reward import verdict
from optimizers.maspo.templates import (MATH_ANSWER, MATH_FINAL_CRITERIA, MATH_INTERMEDIATE_CRITERIA, MATH_ROLES,
                                        MATH_SYSTEM, TEMPLATES, Judging, Proposal, role_place, task_of,
                                        templates_for)
from tests.optimizers.fakes import FakeRunner, seed_bundle
from tests.optimizers.math_layout import write_math_layout
from tests.optimizers.test_maspo_unit import Model

SHARED, CHAIN, STAR = ("solver",), ("decomposer", "computer", "checker", "verifier"), ("manager", "w1", "w2")
PLACES = [  # (roles in native order, role, its place in the graph)
    (SHARED, "solver", "shared"),
    (CHAIN, "decomposer", "intermediate"), (CHAIN, "checker", "intermediate"), (CHAIN, "verifier", "terminal"),
    (STAR, "w1", "worker"), (STAR, "w2", "worker"), (STAR, "manager", "manager"),
]
OTHER_DATASETS = ["gpqa", "hotpotqa", "lcb", "apps", "swe", "bfcl", "apibank", "toolhop", "fake", None]
TRACES = (Trace("Compute $x$.", "decomposer: step 1", "the value is 3", 0.0, "Wrong answer: boxed '3' is not ..."),)
CASES = ("Problem: p\n'decomposer' said: d\nFeedback: f",)


def proposal(roles: tuple[str, ...], role: str, traces=TRACES, cases=CASES) -> Proposal:
    graph = role_graph(roles)
    return Proposal(role, role_place(graph, role), graph.describe(role), graph.successor(role), "You are it.",
                    traces, cases)


@pytest.mark.parametrize("roles,role,place", PLACES)
def test_role_place_follows_the_graph(roles, role, place):
    assert role_place(role_graph(roles), role) == place


@pytest.mark.parametrize("dataset", OTHER_DATASETS)
@pytest.mark.parametrize("roles,role,place", PLACES)
def test_every_other_dataset_gets_exactly_the_generic_templates(dataset, roles, role, place):
    """8.4: only MATH has its own templates; any other dataset renders today's generic prompts byte for byte."""
    graph = role_graph(roles)
    t = templates_for(dataset)
    assert t.name == "generic" and dataset not in TEMPLATES
    assert t.proposal(proposal(roles, role)) == proposal_prompt(role, graph.describe(role), role == graph.terminal,
                                                                 "You are it.", TRACES, CASES)
    judged = Judging(role, place, "q1", "Compute $x$.", "out a", "out b")
    assert t.pairwise(judged) == pairwise_prompt(role, "q1", "Compute $x$.", "out a", "out b")


@pytest.mark.parametrize("roles,role,place", PLACES)
def test_math_proposal_uses_the_math_template_for_the_role_place(roles, role, place):
    text = templates_for("math").proposal(proposal(roles, role))
    graph = role_graph(roles)
    assert text != proposal_prompt(role, graph.describe(role), role == graph.terminal, "You are it.", TRACES, CASES)
    assert MATH_SYSTEM in text and f"Agent role: '{role}'" in text and MATH_ROLES[place] in text
    assert "<current_instruction>\nYou are it.\n</current_instruction>" in text
    assert text.endswith("Provide the new instruction within ``` blocks.")
    assert "Misalignment cases (hard negatives)" in text and CASES[0] in text
    answers = place in {"shared", "terminal", "manager"}
    assert (MATH_ANSWER in text) is answers  # an answering role: the \boxed{} final answer MATH's scorer reads
    if not answers:  # an intermediate role: its output is the input of the role that reads it next
        assert f"it is the input of '{graph.successor(role)}'" in text and "\\boxed" not in text
    other = {p for p in MATH_ROLES if p != place}
    assert not any(MATH_ROLES[p] in text for p in other)


def test_math_proposal_keeps_the_caps():
    long = Trace("P" * 1500 + "Q" * 1500, "C" * 3000 + "D" * 3000, "O" * 3000 + "E" * 3000, 0.0, "fb")
    text = templates_for("math").proposal(proposal(CHAIN, "computer", traces=(long,), cases=()))
    problem = text.split("## Problem\n", 1)[1].split("\n## Context this role read\n", 1)[0]
    context = text.split("## Context this role read\n", 1)[1].split("\n## This role's output\n", 1)[0]
    output = text.split("## This role's output\n", 1)[1].split("\n## Team score\n", 1)[0]
    assert len(problem) <= PROBLEM_CHARS and problem.startswith("P") and problem.endswith("Q")
    assert len(context) <= OUTPUT_CHARS and len(output) <= OUTPUT_CHARS and output.endswith("E")
    assert "Misalignment" not in text  # no mined case, no section


@pytest.mark.parametrize("roles,role,place", [p for p in PLACES if p[2] != "shared"])
def test_math_judge_is_role_aware_and_keeps_the_reply_convention(roles, role, place):
    text = templates_for("math").pairwise(Judging(role, place, "math_1", "Compute $x$.", "A" * 9000, "b"))
    criteria = MATH_FINAL_CRITERIA if place in {"terminal", "manager"} else MATH_INTERMEDIATE_CRITERIA
    assert text.startswith("<judge_task>pairwise</judge_task>\n") and criteria in text and MATH_ROLES[place] in text
    assert re.search(r"(?m)^Item: math_1$", text) and text.endswith("Winner: A, Winner: B or Winner: TIE")
    assert len(text.split("<response_a>\n", 1)[1].split("\n</response_a>", 1)[0]) <= OUTPUT_CHARS


def test_the_simulated_judge_reads_the_math_judge_prompt():
    row = Row(id="math_1", dataset="math", task={"problem": "Compute 1+1."}, gold={"answer": "2"})
    judge = SimJudge(BENCHMARK.failure_modes, lambda i: (BENCHMARK, row) if i == row.id else None)
    right, wrong = "\\boxed{2}\nok\n\\boxed{2}", "\\boxed{3}\nno\n\\boxed{3}"
    prompt = templates_for("math").pairwise(Judging("computer", "intermediate", row.id, "Compute 1+1.", wrong, right))
    assert verdict(judge.reply(prompt), "B") == 1.0


@pytest.mark.parametrize("feedback,remedied", [("Correct: boxed '2' is equivalent to the gold answer.", False),
                                               ("Unboxed reply: No \\boxed{} answer found; box it.", True)])
def test_the_simulated_reflection_reads_the_math_proposal_prompt(tmp_path, feedback, remedied):
    """The MATH template's own text names no failure mode: only the traces' feedback makes the simulated
    reflection add a remedy (engine/sim/policy.py rule 1, unchanged)."""
    data_dir, bench = write_math_layout(tmp_path, n_train=1, n_validation=0, n_test=0)
    policy = Policy({"math": (bench, bench.load_rows(list(bench.splits().train), str(data_dir)))})
    trace = Trace("Compute 1+1.", "", "\\boxed{2}", 0.0, feedback)
    text = templates_for("math").proposal(proposal(CHAIN, "verifier", traces=(trace,), cases=()))
    reply = policy.reflect([{"role": "user", "content": text}])
    unboxed = BENCHMARK.failure_modes[0]
    assert reply == ("```\nYou are it.\n" + unboxed.remedy + "\n```" if remedied else "```\nYou are it.\n```")


class Recording(Model):
    def __init__(self, judge_reply="Winner: TIE"):
        super().__init__(judge_reply)
        self.texts: list[str] = []

    async def complete(self, messages, *, purpose, key, temperature=None, max_tokens=None):
        self.texts.append(messages[-1]["content"])
        return await super().complete(messages, purpose=purpose, key=key, temperature=temperature)


@pytest.mark.parametrize("dataset,name", [("math", "math-upstream"), ("fake", "generic"), ("gpqa", "generic")])
def test_the_method_takes_its_templates_from_the_task_its_rows_name(dataset, name):
    train = [Row(id=f"t{i}", dataset=dataset, task={"problem": f"Compute {i} + 1."}) for i in range(12)]
    runner, model = FakeRunner(30, lambda r, b, i: 0.0, roles=CHAIN), Recording()
    result = anyio.run(Maspo(seed=0, reflection=model, judge=Model()).optimize, runner, train, [],
                       seed_bundle(CHAIN), 30)
    assert result.artifacts["policy"]["templates"] == name and Maspo.implementation_version == 2
    assert model.texts  # the first role (decomposer, intermediate) was proposed for
    for text in model.texts:
        if dataset == "math":
            assert MATH_SYSTEM in text and MATH_ROLES["intermediate"] in text
        else:
            assert text.startswith("You optimize the instruction of the role 'decomposer' in a multi-agent team.")
            assert MATH_SYSTEM not in text


def test_task_of_mixed_or_empty_rows_is_none():
    rows = [Row(id="a", dataset="math", task={}), Row(id="b", dataset="gpqa", task={})]
    assert task_of(rows) is None and task_of([]) is None and task_of(rows[:1]) == "math"


# ------------------------------------------------------------------ a MATH job, read from its store
BUDGET = 240  # the computer's 3 steps (<= 30 + 60 + 60), then the verifier's first step
def recorded(db: Path, component: str) -> list[dict]:
    conn = sqlite3.connect(str(db))
    try:
        payloads = [json.loads(p) for (p,) in conn.execute(
            "SELECT payload FROM events WHERE event_type='model_call' ORDER BY rowid")]
    finally:
        conn.close()
    return [p for p in payloads if p.get("component") == component]


@pytest.mark.slow
def test_a_math_job_records_math_template_reflection_and_judge_requests(tmp_path):
    """Sequential MATH team of 2 (computer -> verifier): the computer's three depth steps, then the verifier's."""
    data_dir, bench = write_math_layout(tmp_path / "math")
    rows = bench.load_rows([*bench.splits().train, *bench.splits().validation, *bench.splits().test], str(data_dir))
    server = SimServer(Policy({"math": (bench, rows)}, model_ids=("test-model",))).start()
    out = tmp_path / "job"
    try:
        cfg = build_config(cell="task=math,topology=sequential,team_size=2", method="maspo", seed=0, out=str(out),
                           budget=BUDGET, task_endpoints=[server.base_url], model_id="test-model",
                           data_dir=str(data_dir), concurrency=8, reflection_endpoint=server.base_url,
                           reflection_model="simulated-reflection", quiet=True, request_timeout=5.0,
                           allow_any_cell=True, phase="optimize")
        anyio.run(run_job, JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)}), bench)
    finally:
        server.stop()
    proposals = [p for p in recorded(out / "card.sqlite", "reflection") if p["purpose"] == "maspo.proposal"]
    by_role: dict[str, list[str]] = {}
    for p in proposals:
        assert p["params"]["temperature"] == 0.7
        text = p["request"]["messages"][-1]["content"]
        role = re.search(r"(?m)^Agent role: '(\w+)'$", text).group(1)  # type: ignore[union-attr]
        by_role.setdefault(role, []).append(text)
        assert MATH_SYSTEM in text and "\n## Problem\n" in text and "sin^2" in text
    assert set(by_role) == {"computer", "verifier"}, "both roles proposed for"
    for text in by_role["computer"]:  # intermediate: hands its output on to the verifier
        assert MATH_ROLES["intermediate"] in text and "it is the input of 'verifier'" in text
        assert MATH_ANSWER not in text
    for text in by_role["verifier"]:  # terminal: the \boxed{} final answer MATH's scorer reads
        assert MATH_ROLES["terminal"] in text and MATH_ANSWER in text
    judged = [p["request"]["messages"][-1]["content"] for p in recorded(out / "card.sqlite", "judge")]
    assert judged and all(MATH_SYSTEM in t for t in judged)
    assert any(MATH_INTERMEDIATE_CRITERIA in t for t in judged)  # the computer's own output (local validity)
    assert any(MATH_FINAL_CRITERIA in t for t in judged)  # the verifier's final answer (lookahead)
    result = json.loads((out / "optimization" / "optimizer_result.json").read_text())
    assert "math-upstream" in json.dumps(result)
