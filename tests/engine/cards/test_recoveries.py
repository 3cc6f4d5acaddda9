"""Recoveries by re-running, re-derived: a recovered job's card validates (its budget is the re-run's, from what
its ledger committed after the job.recovery), and a job.recovery stands only on its evidence: a fake one (shielding a
forged phase summary) is E_RECOVERY_UNFOUNDED, on cards with and without infrastructure failures."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from engine.cards.bundle import Bundle
from engine.cards.export import export_card
from engine.cards.validate import validate_bundle
from tests.engine.cards.cardutil import lines, put_lines
from tests.engine.cards.kinds import kind_job, recovered_job
from tests.engine.cards.test_forgery import edit_annotation, forged


def test_a_recovered_job_validates_and_its_budget_is_still_re_derived(tmp_path):
    card = export_card(recovered_job(tmp_path / "job"))
    mutations = lines(card, "mutations")
    assert any(m["mutation_type"] == "job.recovery" for m in mutations)
    optimize = [m for m in mutations if m["mutation_type"] == "phase.completed"
                and m["new_value"]["phase"] == "optimize"]
    assert len(optimize) == 2 and optimize[0]["new_value"]["budget"] != optimize[-1]["new_value"]["budget"]
    assert validate_bundle(card) == []
    optimize[-1]["new_value"]["budget"]["successful"] += 1
    put_lines(card, "mutations", mutations)
    forged(card, "E_BUDGET_MISMATCH")


def test_an_infrastructure_failure_claimed_after_the_recovery_is_counted(tmp_path):
    """Only claims recorded before the job.recovery belong to the optimization it set aside: relabelling a
    re-run rollout an infrastructure failure (its newer claim) leaves the closing budget short of it."""
    card = export_card(recovered_job(tmp_path / "job"))
    claims = [a for a in lines(card, "annotations") if a["namespace"] == "mpb.rollout"]
    recovery = next(i for i, m in enumerate(lines(card, "mutations")) if m["mutation_type"] == "job.recovery")
    after = {m["target_id"] for m in lines(card, "mutations")[recovery:] if m["mutation_type"] == "annotation.set"}
    node = next(a["target_id"] for a in claims if a["payload"]["phase"] == "optimize" and a["target_id"] in after
                and a["payload"]["status"] == "success" and [c["target_id"] for c in claims].count(a["target_id"]) == 1)
    edit_annotation(card, node, "mpb.rollout", lambda p: p.update(status="infrastructure_failure", charged=False))
    forged(card, "E_BUDGET_MISMATCH")


@pytest.fixture(scope="module")
def faulty_and_clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("recoveries")
    return {"faulty": kind_job(root / "faulty", "single"), "clean": kind_job(root / "clean", "single", faults=False)}


def _shield(card: Bundle, reasons: list[str], moved: list[str]) -> None:
    """Before the last test summary: a forged copy (delta_pp changed) and a job.recovery that supersedes it."""
    mutations = lines(card, "mutations")
    at = max(i for i, m in enumerate(mutations) if m["mutation_type"] == "phase.completed"
             and m["new_value"]["phase"] == "test")
    fake_summary = copy.deepcopy(mutations[at])
    fake_summary["new_value"]["delta_pp"] = 99.0
    recovery: dict[str, Any] = {**copy.deepcopy(mutations[at]), "mutation_type": "job.recovery",
                                "reason": "re-run after infrastructure failures",
                                "new_value": {"mutation_type": "job.recovery", "reasons": reasons, "moved": moved}}
    mutations[at:at] = [fake_summary, recovery]
    for i, m in enumerate(mutations):
        m["sequence"] = i
    put_lines(card, "mutations", mutations)


def _test_evaluation(card: Bundle) -> str:
    return next(a["payload"]["evaluation_id"] for a in lines(card, "annotations")
                if a["namespace"] == "mpb.rollout" and a["payload"].get("phase") == "test")


@pytest.mark.parametrize("kind", ["faulty", "clean"])
def test_a_recovery_that_set_nothing_aside_is_unfounded(faulty_and_clean, kind):
    card = export_card(faulty_and_clean[kind])
    _shield(card, [f"evaluation {_test_evaluation(card)} holds infrastructure failures"], moved=[])
    forged(card, "E_RECOVERY_UNFOUNDED")


def test_a_recovery_without_failures_behind_it_is_unfounded(faulty_and_clean):
    card = export_card(faulty_and_clean["clean"])
    _shield(card, [f"evaluation {_test_evaluation(card)} holds infrastructure failures"], moved=["test.json"])
    forged(card, "E_RECOVERY_UNFOUNDED")
    card = export_card(faulty_and_clean["clean"])
    _shield(card, ["optimization ended infrastructure_invalid"], moved=["optimization.json", "test.json"])
    forged(card, "E_RECOVERY_UNFOUNDED")
