"""Protocol 5.3, "unusable is never a score": no method averages, ranks or credits an infrastructure failure.

The doubles give every infrastructure-failed record a poison score (tests/optimizers/fakes.PoisonScore): reading it
as a number or as text fails the test, so a method that let one into a mean, a sum, a comparison or a prompt would
fail here. The shared rule (optimizers/scoring.py) is checked as a law; then each method runs with ~10% of its
rollouts ending as infrastructure failures, and with whole evaluations unusable (not comparable)."""

from __future__ import annotations

import hashlib

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import InfrastructureInvalidError
from core.models import PromptBundle, RolloutRecord, RolloutStatus, Row
from optimizers.gepa import Gepa
from optimizers.mapro import Mapro
from optimizers.maspo import Maspo
from optimizers.maspo.credit import Credit
from optimizers.mipro import Mipro
from optimizers.scoring import paired_scores, score_of, usable_mean, usable_scores
from tests.optimizers.fakes import FakeReflection, FakeRunner, PoisonScore, infra_record, rows, seed_bundle
from tests.optimizers.test_mapro_unit import ScriptedModel
from tests.optimizers.test_maspo_unit import Model

TRAIN, VAL = rows("t", 12), rows("v", 10)
ROLES = ("analyst", "solver")


def record(i: int, status: str, score: float) -> RolloutRecord:
    row = Row(id=f"r{i}", dataset="fake", task={})
    if status == "infra":
        return infra_record(row, seed_bundle(), i)
    return RolloutRecord(rollout_id=f"r{i}", example_id=row.id, phase="optimize", request_seed=0, bundle_sha256="b",
                         status=RolloutStatus.SUCCESS if score >= 1 else RolloutStatus.SEMANTIC_FAILURE, score=score,
                         budget_exhausted=status == "exhausted")


RECORDS = st.lists(st.tuples(st.sampled_from(["ok", "infra", "exhausted"]), st.sampled_from([0.0, 1.0])),
                   max_size=12)


@settings(max_examples=200, deadline=None)
@given(RECORDS, RECORDS)
def test_means_and_pairs_are_over_usable_records_only(a, b):
    recs = [record(i, s, v) for i, (s, v) in enumerate(a)]
    usable = [v for s, v in a if s == "ok"]
    found = usable_mean(recs)
    assert (found.usable, found.rows) == (len(usable), len(a))
    assert found.value == (sum(usable) / len(usable) if usable else None) and found.comparable == bool(usable)
    assert usable_scores(recs) == {f"r{i}": v for i, (s, v) in enumerate(a) if s == "ok"}
    assert [score_of(r) for r in recs] == [v if s == "ok" else None for s, v in a]
    n = min(len(a), len(b))
    other = [record(i, s, v) for i, (s, v) in enumerate(b)]
    assert paired_scores(recs[:n], other[:n]) == [(x[1], y[1]) for x, y in zip(a[:n], b[:n])
                                                  if x[0] == y[0] == "ok"]


def test_global_credit_skips_items_where_either_rollout_is_unusable():
    ok, infra = record(0, "ok", 1.0), record(1, "infra", 0.0)
    lost = record(2, "ok", 0.0)
    # parent infra-failed and the child failed: no item (was a tie, 0.5); child infra-failed: no item (was a loss)
    assert Credit.global_credit([infra], [lost]) is None and Credit.global_credit([ok], [infra]) is None
    assert Credit.global_credit([infra, lost], [lost, ok]) == 1.0  # one comparable item, the child won it


def flaky(rate: int = 10):
    """~rate% of rollouts (keyed by row, bundle and iteration) end as infrastructure failures."""
    def infra(row: Row, bundle: PromptBundle, iteration: int | str) -> bool:
        key = f"{row.id}|{bundle.digest}|{iteration}".encode()
        return int(hashlib.sha256(key).hexdigest()[:8], 16) % 100 < rate
    return infra


def improves(row: Row, bundle: PromptBundle, iteration: int | str) -> float:
    """More tips in the prompts -> more rows right."""
    tips = sum(p.count("Tip") for p in bundle.roles.values())
    return 1.0 if int(row.id[1:]) % 6 < 1 + tips else 0.0


def run_method(name: str, runner: FakeRunner, roles=ROLES):
    if name == "gepa":
        method = Gepa(seed=1, reflection=FakeReflection())
    elif name == "mipro":
        method = Mipro(seed=1, reflection=FakeReflection())
    elif name == "mapro":
        model = ScriptedModel()
        method = Mapro(seed=1, reflection=model, judge=model, probe=model)
    else:
        method = Maspo(seed=1, reflection=Model(), judge=Model("Winner: B"), minibatch=6)
    return anyio.run(method.optimize, runner, TRAIN, VAL, seed_bundle(roles), runner.ledger.maximum)


@pytest.mark.parametrize("method", ["gepa", "mipro", "mapro", "maspo"])
def test_each_method_under_ten_percent_infrastructure_failures(method):
    runner = FakeRunner(300, improves, roles=ROLES, infra=flaky())
    result = run_method(method, runner)  # any read of an infra-failed record's score raises in PoisonScore
    assert runner.infra_failures >= 5, "too few infrastructure failures injected: the test would show little"
    snap = runner.budget()
    assert snap.charged <= 300 and snap.infrastructure_failures == runner.infra_failures
    assert all(p.native_observed_score is None or 0.0 <= p.native_observed_score <= 1.0 for p in result.curve)


@pytest.mark.parametrize("method", ["gepa", "mipro", "mapro"])
def test_a_seed_with_no_usable_rollout_is_infrastructure_invalid(method):
    """Nothing to compare against: the optimization is infrastructure-invalid (the job keeps the seed, healable)."""
    runner = FakeRunner(300, improves, roles=ROLES, infra=lambda row, bundle, it: True)
    with pytest.raises(InfrastructureInvalidError, match="infrastructure failure"):
        run_method(method, runner)


def test_gepa_child_with_no_usable_row_is_not_comparable():
    """The child's minibatch is all infrastructure failures: rejected (was: its zeros compared with the parent)."""
    seed = seed_bundle(ROLES).digest
    runner = FakeRunner(120, improves, roles=ROLES, infra=lambda row, b, it: b.digest != seed and row.id[0] == "t")
    result = run_method("gepa", runner)
    tried = [e for e in result.artifacts["iterations"] if "paired_usable" in e]
    assert tried and all(e["not_comparable"] and not e["accepted"] and e["paired_usable"] == 0 for e in tried)
    assert len(result.artifacts["candidates"]) == 1 and result.incumbent.digest == seed


def test_mapro_pass_with_no_usable_row_is_not_comparable():
    seed = seed_bundle(ROLES).digest
    runner = FakeRunner(600, improves, roles=ROLES, infra=lambda row, b, it: b.digest != seed)
    result = run_method("mapro", runner)
    passes = [e for e in result.artifacts["events"] if "train_usable" in e]
    assert passes and all(e["train_score"] is None and e["train_usable"] == 0 for e in passes)
    assert result.incumbent.digest == seed and result.stop_reason == "patience"


def test_maspo_offspring_with_no_usable_pair_never_enters_the_beam():
    seed = seed_bundle(ROLES)
    runner = FakeRunner(300, improves, roles=ROLES, infra=lambda row, b, it: b.digest != seed.digest)
    result = run_method("maspo", runner)
    offspring = [o for e in result.artifacts["events"] for o in e.get("offspring", [])]
    assert offspring and all(o.get("skipped") in ("not_comparable", "no_new_prompt") for o in offspring)
    assert any(o.get("skipped") == "not_comparable" for o in offspring)
    assert result.incumbent.roles == seed.roles


def test_poison_score_fails_any_numeric_read():
    p = PoisonScore(0.0)
    for read in (lambda: bool(p), lambda: float(p), lambda: p + 1, lambda: sum([p]), lambda: p < 1, lambda: f"{p}"):
        with pytest.raises(AssertionError):
            read()
