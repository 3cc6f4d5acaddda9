"""MAPRO "demos on" (protocol 8.3, optimizers/mapro/demos.py): demo pools from usable successes of train passes
already run (no extra rollout), rendered into the evaluated and deployed role prompts; preference pairs (good vs
bad output of the blamed role) in the rewrite prompts; infrastructure-failed records never become demos."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import sqlite3
from pathlib import Path

import pytest

from core.blobs import resolve

from core.models import AgentOutput, PromptBundle, RolloutRecord, RolloutStatus
from optimizers.mapro import Mapro
from optimizers.mapro.demos import (DEMO_CHARS, DEMO_HEADING, KEPT_CHARS, PAIR_CHARS, DemoBook, PreferencePair,
                                    examples_of, pick, preference_pair, render_role_prompt)
from optimizers.reflective_dataset import head_tail
from tests.conftest import start_sim
from tests.optimizers.fakes import FakeRunner, infra_record, rows, seed_bundle, transcript_of
from tests.optimizers.optjob import bench, read, run
from tests.optimizers.test_mapro_unit import ScriptedModel

ROLES = ("planner", "solver")


def record(row_id: str, score: float, *, status: RolloutStatus | None = None, rid: str | None = None,
           exhausted: bool = False) -> RolloutRecord:
    status = status or (RolloutStatus.SUCCESS if score >= 1 else RolloutStatus.SEMANTIC_FAILURE)
    return RolloutRecord(rollout_id=rid or f"roll-{row_id}", example_id=row_id, phase="optimize", status=status,
                         score=score, final_output=AgentOutput(text=f"answer {row_id}"), request_seed=0,
                         bundle_sha256="b", budget_exhausted=exhausted)


def outputs(rec: RolloutRecord) -> dict[str, str]:
    return {r: f"{r} output on {rec.example_id}" for r in ROLES}


class DemoRunner(FakeRunner):
    """FakeRunner that keeps every bundle it ran and reports per-role outputs (as SessionRunner.transcripts)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.bundles: list[PromptBundle] = []
        self.outputs_read: list[str] = []

    async def run_batch(self, batch, bundle, iteration):
        self.bundles.append(bundle)
        return await super().run_batch(batch, bundle, iteration)

    async def transcripts(self, records: list[RolloutRecord]) -> list:
        found = []
        for rec in records:
            assert rec.usable, "an unusable record's outputs were read"
            self.outputs_read.append(rec.example_id)
            found.append(transcript_of(rec.rollout_id, {r: f"{r} output on {rec.example_id}" for r in self.roles}))
        return found


def test_only_usable_successes_become_accepted_demos():
    train = rows("t", 6)
    row = {r.id: r for r in train}
    recs = [record("t0", 1.0), record("t1", 0.0), infra_record(train[2], seed_bundle(), 2),
            record("t3", 1.0, exhausted=True), record("t4", 1.0, status=RolloutStatus.SEMANTIC_FAILURE),
            record("t5", 1.0)]
    book = DemoBook(ROLES, "solver", random.Random(0))
    book.add_pass(0, row, recs, outputs)  # the infra record's poison score is never read
    book.rebuild(0)
    assert book.ids() == {"planner": ["t0", "t5"], "solver": ["t0", "t5"]}
    assert {e.example_id for e in book.passes[0]["solver"].values()} == {"t0", "t1", "t5"}  # t1: rejected only
    assert examples_of("solver", "solver", 0, train[2], recs[2], outputs(recs[2])) is None
    # the terminal role falls back to the team's final output; another role without output gives no example
    assert examples_of("solver", "solver", 0, train[0], recs[0], {}).output.endswith("answer t0")
    assert examples_of("planner", "solver", 0, train[0], recs[0], {}) is None


def test_selection_is_deterministic_capped_and_in_input_order():
    train = rows("t", 10)
    recs = [record(r.id, 1.0) for r in train]

    def pools(seed: int) -> dict[str, list[str]]:
        book = DemoBook(ROLES, "solver", random.Random(seed))
        book.add_pass(0, {r.id: r for r in train}, recs, outputs)
        book.rebuild(0)
        return book.ids()

    chosen = pools(7)
    assert chosen == pools(7)
    for ids in chosen.values():
        assert len(ids) == 3 and ids == sorted(ids, key=lambda i: int(i[1:]))  # input (row) order
    rng = random.Random(1)
    few = [examples_of("solver", "solver", 0, r, rec, {}) for r, rec in zip(train[:3], recs)]
    state = rng.getstate()
    assert pick(few, 3, rng) == few and rng.getstate() == state  # <= 3 candidates: no draw


def test_rendered_demos_are_capped_head_and_tail():
    long = rows("t", 1)[0].model_copy(update={"task": {"question": "Q" * 5000 + "END"}})
    demo = examples_of("solver", "solver", 0, long, record("t0", 1.0), {"solver": "A" * 9000 + "LAST"})
    text = render_role_prompt("Be exact.", "solver", [demo])
    assert text.startswith("Be exact.\n\n" + DEMO_HEADING)
    assert "END" in text and "LAST" in text and "[...]" in text  # head and tail kept around the elision
    assert len(text) < len("Be exact.") + 2 * DEMO_CHARS + 300
    assert render_role_prompt("Be exact.", "solver", []) == "Be exact."


def test_preference_pair_prefers_the_same_row_and_needs_both_sides():
    train = rows("t", 3)
    row = {r.id: r for r in train}
    book = DemoBook(ROLES, "solver", random.Random(0))
    book.add_pass(0, row, [record("t0", 1.0), record("t1", 1.0), record("t2", 0.0)], outputs)
    book.add_pass(1, row, [record("t0", 1.0, rid="p1"), record("t1", 0.0, rid="p1b"), record("t2", 0.0, rid="p1c")],
                  outputs)
    shown = [record("t1", 0.0, rid="p1b")]
    pair = book.pair("solver", 1, shown)
    assert pair is not None and pair.as_json()["rejected"]["example_id"] == "t1"
    assert pair.as_json()["preferred"] == {"example_id": "t1", "rollout_id": "roll-t1", "round": 0, "score": 1.0}
    assert book.pair("solver", 1, [record("t2", 0.0, rid="p1c")]).good.example_id == "t0"  # latest pass first
    assert preference_pair("solver", [], list(book.passes[0]["solver"].values())) is None


def _score(row, bundle, it):  # more tips -> more rows right; rows t5 are infrastructure failures
    return 1.0 if int(row.id[1:]) < 2 + 2 * bundle.roles["solver"].split(DEMO_HEADING)[0].count("Tip") else 0.0


@pytest.mark.anyio
async def test_evaluated_and_deployed_bundles_carry_demos_and_mutations_see_a_pair():
    train = rows("t", 8)
    infra = (lambda r, b, i: r.id == "t5")
    runner = DemoRunner(600, _score, roles=ROLES, infra=infra)
    model = ScriptedModel()
    prompts: list[tuple[str, str]] = []
    real = model.complete

    async def complete(messages, **kw):
        prompts.append((kw["purpose"], messages[-1]["content"]))
        return await real(messages, **kw)

    model.complete = complete  # type: ignore[method-assign]
    result = await Mapro(seed=3, reflection=model, judge=model, probe=model).optimize(
        runner, train, [], PromptBundle(roles={r: f"You are the {r}." for r in ROLES}), 600)
    art = result.artifacts
    assert runner.ledger.snapshot().charged == 7 * len(runner.bundles)  # no extra rollout: train passes only
    assert "t5" not in runner.outputs_read  # infrastructure-failed rollouts are never read
    first = art["demo_pools"][0]
    assert first["round"] == 0 and [d["example_id"] for d in first["pools"]["solver"]] == ["t0", "t1"]
    for built in art["demo_pools"]:
        for pool in built["pools"].values():
            assert pool and len(pool) <= 3 and all(d["score"] == 1.0 and d["example_id"] != "t5" for d in pool)
    # every bundle after the seed pass renders the pools into its role prompts, and the deployed one is such a bundle
    built = [{r: [d["example_id"] for d in b["pools"][r]] for r in ROLES} for b in art["demo_pools"]]
    for bundle in runner.bundles[1:]:
        ids = bundle.metadata["mapro_demo_ids"]
        assert ids in built
        for role in ROLES:
            assert DEMO_HEADING in bundle.roles[role] and 1 <= len(ids[role]) <= 3
            assert all(f"{role} output on {i}" in bundle.roles[role] for i in ids[role])
    deployed = result.incumbent
    assert deployed.digest in {b.digest for b in runner.bundles[1:]} and DEMO_HEADING in deployed.roles["solver"]
    assert art["incumbent_bundle"]["roles"] == deployed.roles
    # preference pairs: in the mutation prompts, recorded per round; never from an infrastructure failure
    mutations = [text for purpose, text in prompts if purpose == "mapro.mutation"]
    assert mutations and all("<preferred_output>" in t and "<rejected_output>" in t for t in mutations)
    pairs = [e["preference_pair"] for e in art["events"] if e.get("preference_pair")]
    assert len(pairs) == len(mutations)
    for pair, text in zip(pairs, mutations):
        assert pair["preferred"]["score"] == 1.0 and pair["rejected"]["score"] == 0.0
        assert "t5" not in (pair["preferred"]["example_id"], pair["rejected"]["example_id"])
        good = re.search(r"<preferred_output>\n(.*?)</preferred_output>", text, re.DOTALL).group(1)
        bad = re.search(r"<rejected_output>\n(.*?)</rejected_output>", text, re.DOTALL).group(1)
        assert f"on {pair['preferred']['example_id']}\n" in good and f"on {pair['rejected']['example_id']}\n" in bad
    inits = [text for purpose, text in prompts if purpose == "mapro.init"]
    assert inits and all("<preferred_output>" in t for t in inits)
    assert all(p is not None for ps in art["init_preference_pairs"].values() for p in ps)
    # judge and probe prompts see pool instructions, never the demos
    assert not any(DEMO_HEADING in text for purpose, text in prompts if purpose in ("mapro.node", "mapro.edge"))


def test_the_demo_behaviour_is_a_new_implementation_version():
    assert Mapro.implementation_version == 2


def wire_calls(db: Path) -> list[dict]:
    """Every recorded model call of a job's card (blob references resolved): what was sent on the wire."""
    conn = sqlite3.connect(str(db))
    try:
        def blob(digest: str) -> bytes:
            return bytes(conn.execute("SELECT content FROM blobs WHERE sha256=?", (digest,)).fetchone()[0])

        return [resolve(json.loads(p), blob) for (p,) in
                conn.execute("SELECT payload FROM events WHERE event_type='model_call' ORDER BY rowid")]
    finally:
        conn.close()


@pytest.mark.slow
def test_job_sends_the_demos_and_preference_pairs_on_the_wire(tmp_path):
    """A mapro job on the simulated endpoint: the agents' system prompts of train passes after the seed pass carry
    the demo pools (recorded in optimizer_result.json), the reflection requests carry the preference pairs, and
    nothing beyond one train pass per evaluated assignment is charged."""
    server = start_sim(bench())
    try:
        run(tmp_path / "job", server.base_url, method="mapro", allow_any_cell=True)  # mapro's grid is team cells
    finally:
        server.stop()
    out = tmp_path / "job"
    opt = read(out, "optimization.json")
    assert opt["status"] == "completed"
    art = read(out, "optimization/optimizer_result.json")["artifacts"]
    n_train = len(opt["training_ids"])
    assert opt["budget"]["charged"] == n_train * art["evaluated_assignments"]  # demos cost no rollout
    pools = art["demo_pools"]
    assert pools and pools[0]["round"] == 0
    demo_ids = {d["example_id"] for p in pools for d in p["pools"]["solver"]}
    assert demo_ids and demo_ids <= set(opt["training_ids"])
    calls = wire_calls(out / "card.sqlite")
    systems = [m["content"] for c in calls if c.get("component") is None
               for m in c["request"]["messages"] if m["role"] == "system"]
    with_demos = [s for s in systems if DEMO_HEADING in s]
    assert with_demos, "no agent request carried the demo pool"
    reflection = [c["request"]["messages"][-1]["content"] for c in calls if c.get("component") == "reflection"]
    assert any("<preferred_output>" in t and "<rejected_output>" in t for t in reflection)
    judged = [c["request"]["messages"][-1]["content"] for c in calls if c.get("component") == "judge"]
    assert judged and not any(DEMO_HEADING in t for t in judged)
    selection = read(out, "selection.json")
    assert selection["selected_candidate"] == "incumbent" and selection["fallback_reason"] is None
    deployed = selection["deployed_bundle"]
    assert DEMO_HEADING in deployed["roles"]["solver"] and deployed["metadata"]["mapro_demo_ids"]["solver"]
    assert any(deployed["roles"]["solver"] in s for s in systems)  # the deployed prompt, demos included, was sent


def test_an_example_keeps_only_what_its_renderings_read():
    """Every pass's examples are kept for the search: a 1 MB role output is kept head+tail at the longest cut a
    rendering reads, and the demo and the preference-pair renderings are the same as from the full text."""
    train = rows("t", 2)
    big = "step " * 200_000
    full = {r: f"{r}:" + big + "end" for r in ROLES}
    good = examples_of("solver", "solver", 0, train[0], record(train[0].id, 1.0), full)
    bad = examples_of("solver", "solver", 0, train[1], record(train[1].id, 0.0), full)
    assert good is not None and bad is not None
    assert len(good.output) <= KEPT_CHARS and good.output.startswith("solver:step") and good.output.endswith("end")
    assert render_role_prompt("Solve.", "solver", [good]) == render_role_prompt(
        "Solve.", "solver", [dataclasses.replace(good, output=full["solver"].strip())])
    pair = PreferencePair("solver", good, bad).render()
    assert head_tail(full["solver"].strip(), PAIR_CHARS) in pair
