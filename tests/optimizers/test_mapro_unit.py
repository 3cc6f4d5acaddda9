"""MAPRO: the MAP solver is exact (hypothesis vs brute force), role graphs, and the search on in-memory doubles."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizers.mapro import Mapro
from optimizers.mapro.map_solver import brute_force_map, map_assignment, objective
from optimizers.mapro.roles import parse_score, role_graph
from tests.optimizers.fakes import FakeRunner, rows, seed_bundle

POT = st.floats(min_value=0.01, max_value=10.0, allow_nan=False)


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 5))
    names = [f"r{i}" for i in range(n)]
    sizes = {v: draw(st.integers(1, 4)) for v in names}
    node = {v: draw(st.lists(POT, min_size=sizes[v], max_size=sizes[v])) for v in names}
    edge = {}
    for i in range(n):
        for j in range(i + 1, n):
            if draw(st.booleans()):
                edge[(names[i], names[j])] = [draw(st.lists(POT, min_size=sizes[names[j]], max_size=sizes[names[j]]))
                                              for _ in range(sizes[names[i]])]
    return node, edge


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(graphs())
def test_map_solver_is_exact_against_brute_force(graph):
    node, edge = graph
    found = map_assignment(node, edge)
    best, value = brute_force_map(node, edge)
    assert set(found) == set(node) and all(0 <= found[v] < len(node[v]) for v in node)
    assert objective(node, edge, found) == pytest.approx(value, rel=1e-12, abs=1e-12)


def test_map_prefers_joint_optimum_over_greedy_nodes():
    # node-wise argmax (1, 1) is beaten by (0, 0) through the edge: a greedy solver would be wrong
    node = {"a": [0.5, 0.6], "b": [0.5, 0.6]}
    edge = {("a", "b"): [[1.0, 0.1], [0.1, 0.2]]}
    assert map_assignment(node, edge) == {"a": 0, "b": 0} == brute_force_map(node, edge)[0]


def test_role_graphs_per_topology():
    chain = role_graph(["analyzer", "inspector", "caller", "verifier"])
    assert chain.kind == "chain" and chain.terminal == "verifier"
    assert chain.edges == (("analyzer", "inspector"), ("inspector", "caller"), ("caller", "verifier"))
    star = role_graph(["manager", "a_worker", "b_worker"])
    assert star.kind == "star" and star.roles[0] == "manager" and star.terminal == "manager"
    assert star.ascent_order() == ("a_worker", "b_worker", "manager")
    assert set(star.edges) == {("a_worker", "manager"), ("b_worker", "manager")}
    shared = role_graph(["debater"])
    assert shared.kind == "shared" and shared.edges == ()
    assert parse_score("thinking\nScore: 7") == 7 and parse_score("seven") is None


class ScriptedModel:
    """Reflection / judge / probe double: rewrites append a tip; the judge scores a prompt by its tips."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def complete(self, messages, *, purpose, key, temperature=None, max_tokens=None):
        self.calls.append((purpose, key))
        text = messages[-1]["content"]
        if purpose.endswith(("init", "mutation")):
            cur = re.search(r"<current_instruction>\n(.*?)\n</current_instruction>", text, re.DOTALL).group(1)
            return f"```\n{cur}\nTip {len(self.calls)}.\n```"
        if purpose.endswith("node"):
            cand = re.search(r"<candidate_prompt>\n(.*?)\n</candidate_prompt>", text, re.DOTALL).group(1)
            return f"Score: {min(10, 2 + 2 * cand.count('Tip'))}"
        if purpose.endswith("blame"):
            return "Blame: 5"
        return "Score: 5" if purpose.endswith("edge") else "probe reply"

    def usage(self):
        return {"model_calls": len(self.calls)}


@pytest.mark.anyio
async def test_mapro_charges_one_train_pass_per_new_assignment_and_keeps_the_best():
    train = rows("t", 6)

    def score(row, bundle, it):  # more tips -> more rows right
        return 1.0 if int(row.id[1:]) < 2 + 2 * bundle.roles["solver"].count("Tip") else 0.0

    runner = FakeRunner(600, score)
    model = ScriptedModel()
    method = Mapro(seed=1, reflection=model, judge=model, probe=model)
    result = await method.optimize(runner, train, [], seed_bundle(), 600)
    passes = [c for c in runner.calls if c[0] == [r.id for r in train]]
    assert len(passes) == len(runner.calls)  # every charged batch is a full train pass
    assert runner.ledger.snapshot().charged == 6 * len(passes)
    assert result.artifacts["evaluated_assignments"] == len(passes)
    assert result.incumbent.roles["solver"].count("Tip") >= 1
    assert result.artifacts["incumbent_train_score"] > 2 / 6
    assert result.stop_reason in {"patience", "max_rounds"}
    assert any(p == "mapro.probe" for p, _ in model.calls) and any(p == "mapro.node" for p, _ in model.calls)


@pytest.mark.anyio
async def test_mapro_never_starts_a_train_pass_that_does_not_fit():
    train = rows("t", 6)
    runner = FakeRunner(15, lambda r, b, i: 0.0)  # seed pass (6) + one pass (6); a third would not fit
    model = ScriptedModel()
    result = await Mapro(seed=0, reflection=model, judge=model, probe=model).optimize(
        runner, train, [], seed_bundle(), 15)
    assert result.stop_reason in {"budget", "patience"}  # section 6: MAPRO stops with `budget`
    snap = runner.ledger.snapshot()
    assert snap.charged <= 12 and snap.charged % 6 == 0 and not snap.violations()


def test_smallest_budget_is_two_train_passes():
    assert Mapro().smallest_budget(150, 50) == 300 and Mapro().smallest_budget(48, 50) == 96
    assert "300" in Mapro().plan(600, 150, 50) or "at most 3" in Mapro().plan(600, 150, 50)
