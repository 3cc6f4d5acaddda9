"""Replica seeds in whole jobs (issue 35 item 5).

* Section 5.5, paired evaluation: the seed and deployed bundles see the same seed per row (the paired evaluation
  seed of the condition, evaluation seed, split and example id, never of the bundle or method), and with replica
  seeds (section 2.2) replica i of both bundles sends that seed + i. The seed-bundle re-run (an `identity` job of
  the same cell and seed) reproduces the baseline exactly: the same evaluation, the same scores, the same seeds.
* Section 6 ("job.json must match exactly") / 5.6: an Independent --out written before replica seeds (its
  condition without `member_seed_scheme`, its calls sent with the member-turn hash) is refused on resume in one
  line naming the change, and nothing is sent again; a job of another topology written before resumes.
* The card's `run.seed_derivation` states the derivation the job's calls followed (from its job.json condition).
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

import core.seeds
from core.errors import JobIdentityError
from core.seeds import MEMBER_SEED_RULES, call_seed, paired_evaluation_seed
from engine.cards.export import export_card
from engine.cards.validate import validate_path
from tests.conftest import start_sim
from tests.optimizers.optjob import bench, read, run

CELL = "task=gpqa,topology=independent"
S55 = "protocol-v1 §5.5: seed and deployed bundles see the same seed per row"
S22 = "protocol-v1 §2.2: replica i sends seed (row seed + i)"


def gpqa_fake():
    fake = bench()
    fake.name = "gpqa"  # type: ignore[misc]  # the gpqa team spec (Independent: solver replicas); fake sum rows
    return fake


def member_seeds(db: Path, evaluation_id: str) -> dict[str, dict[int, set[int]]]:
    """example id -> member -> the seeds its recorded calls sent, for the rollouts of one evaluation."""
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT node_id, payload FROM events WHERE event_type='model_call' AND ok=1 AND "
                            "node_id LIKE ?", (f"%/eval:{evaluation_id[:11]}#%",)).fetchall()
    finally:
        conn.close()
    out: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for node_id, payload in rows:
        call = json.loads(payload)
        out[node_id.split("/")[1]][call["member"]].add(call["seed"])
    return out


def row_seeds(out: Path, evaluation_id: str) -> dict[str, int]:
    return {r["example_id"]: r["request_seed"] for r in read(out, f"evaluations/{evaluation_id}.json")["records"]}


@pytest.mark.slow
def test_paired_seeds_hold_with_replica_seeds_and_the_seed_bundle_rerun_reproduces_the_baseline(tmp_path):
    fake = gpqa_fake()
    server = start_sim(fake)
    try:
        run(tmp_path / "gepa", server.base_url, fake=fake, method="gepa", cell=CELL, allow_any_cell=True)
        run(tmp_path / "seed", server.base_url, fake=fake, method="identity", cell=CELL, allow_any_cell=True)
    finally:
        server.stop()
    test = read(tmp_path / "gepa", "test.json")
    assert test["selected_candidate"] == "incumbent"  # the deployed bundle is not the seed bundle
    base, dep = test["baseline_evaluation_id"], test["deployed_evaluation_id"]
    assert base != dep
    cond = read(tmp_path / "gepa", "job.json")["condition"]
    assert cond["member_seed_scheme"] == "replica-offset/v1"
    want = {x: paired_evaluation_seed(test["condition_id"], 1, "test", x) for x in test["example_ids"]}
    assert row_seeds(tmp_path / "gepa", base) == row_seeds(tmp_path / "gepa", dep) == want, S55
    db = tmp_path / "gepa" / "card.sqlite"
    for evaluation in (base, dep):
        seen = member_seeds(db, evaluation)
        assert set(seen) == set(want)
        for example, members in seen.items():
            assert members == {i: {want[example] + i} for i in range(4)}, S22
    # the seed-bundle re-run: the same evaluation (content-addressed), scores and per-replica seeds
    again = read(tmp_path / "seed", "test.json")
    assert again["baseline_evaluation_id"] == again["deployed_evaluation_id"] == base
    assert again["baseline_scores"] == again["deployed_scores"] == test["baseline_scores"] and again["delta_pp"] == 0
    assert member_seeds(tmp_path / "seed" / "card.sqlite", base) == member_seeds(db, base)
    # the card states the derivation its calls followed
    card = export_card(tmp_path / "gepa", tmp_path / "card")
    assert validate_path(tmp_path / "card") == []
    derivation = json.loads(card.files["manifest.json"])["run"]["seed_derivation"]
    assert derivation["member_seed_scheme"] == "replica-offset/v1", S22
    assert derivation["member_seed"] == MEMBER_SEED_RULES["replica-offset/v1"]
    assert "paired_evaluation_seed(condition_id" in derivation["rollout_seed"], S55


def _job_written_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cell: str):
    """A finished job as the engine wrote it before replica seeds: no topology's members were replicas."""
    fake = gpqa_fake()
    server = start_sim(fake)
    monkeypatch.setattr(core.seeds, "REPLICA_TOPOLOGIES", frozenset())
    run(tmp_path / "job", server.base_url, fake=fake, method="identity", cell=cell, allow_any_cell=True)
    monkeypatch.undo()
    return fake, server


def test_an_independent_job_written_before_replica_seeds_is_refused_in_one_line(tmp_path, monkeypatch):
    fake, server = _job_written_before(tmp_path, monkeypatch, CELL)
    try:
        job = tmp_path / "job"
        old = {p.name: p.read_bytes() for p in (job / "job.json", job / "card.sqlite")}
        assert "member_seed_scheme" not in read(job, "job.json")["condition"]
        base = read(job, "test.json")["baseline_evaluation_id"]
        seeds = row_seeds(job, base)
        assert {x: m[1] for x, m in member_seeds(job / "card.sqlite", base).items()} == {
            x: {call_seed(s, "solver", 1, 0)} for x, s in seeds.items()}  # sent with the member-turn hash
        sent = len(server.log)
        with pytest.raises(JobIdentityError) as refused:
            run(job, server.base_url, fake=fake, method="identity", cell=CELL, allow_any_cell=True)
        assert len(server.log) == sent  # nothing re-sent
    finally:
        server.stop()
    message = str(refused.value)
    assert "\n" not in message
    assert "differs in: condition.member_seed_scheme, condition_id);" in message
    assert {p.name: p.read_bytes() for p in (job / "job.json", job / "card.sqlite")} == old  # untouched
    # its card states the derivation its calls followed: the member-turn hash
    manifest = json.loads(export_card(job).files["manifest.json"])
    assert manifest["run"]["seed_derivation"]["member_seed_scheme"] == "member-turn-hash/v1"


@pytest.mark.parametrize("cell", ["task=gpqa,topology=decentralized", "task=gpqa,topology=sequential"])
def test_a_job_of_another_topology_written_before_resumes_and_sends_nothing(tmp_path, monkeypatch, cell):
    fake, server = _job_written_before(tmp_path, monkeypatch, cell)
    try:
        first = read(tmp_path / "job", "result.json")
        sent = len(server.log)
        again = run(tmp_path / "job", server.base_url, fake=fake, method="identity", cell=cell, allow_any_cell=True)
        assert len(server.log) == sent  # every recorded call replayed
    finally:
        server.stop()
    assert again["test"]["baseline_scores"] == first["test"]["baseline_scores"]
