"""Ledger laws, including hypothesis property tests over random fault schedules and batch shapes."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import BudgetError
from core.ledger import BudgetLedger
from core.models import RolloutStatus

S, SEM, INFRA = RolloutStatus.SUCCESS, RolloutStatus.SEMANTIC_FAILURE, RolloutStatus.INFRASTRUCTURE_FAILURE


def test_reserve_trims_at_the_cap_and_never_overshoots():
    ledger = BudgetLedger(5)
    res = ledger.reserve(8)
    assert (res.requested, res.granted, res.trimmed) == (8, 5, True)
    for slot in range(5):
        ledger.commit(res, slot, S)
    snap = ledger.snapshot()
    assert snap.charged == 5 and snap.remaining == 0 and snap.violations() == []
    assert ledger.reserve(3).granted == 0
    assert ledger.snapshot().budget_exhausted_requests == 3 + 3


def test_infrastructure_failures_are_refunded_and_counted():
    ledger = BudgetLedger(2)
    res = ledger.reserve(2)
    ledger.note_infrastructure_attempt(res, 0)
    ledger.note_infrastructure_attempt(res, 0)
    assert ledger.commit(res, 0, S) is True
    for _ in range(3):
        ledger.note_infrastructure_attempt(res, 1)
    assert ledger.commit(res, 1, INFRA) is False
    snap = ledger.snapshot()
    assert (snap.charged, snap.attempted, snap.infrastructure_failures, snap.retries, snap.remaining) == (1, 6, 5, 5, 1)
    assert snap.violations() == []
    assert ledger.reserve(5).granted == 1  # the refunded slot is free again


def test_each_slot_commits_exactly_once():
    ledger = BudgetLedger(3)
    res = ledger.reserve(1)
    ledger.commit(res, 0, SEM)
    with pytest.raises(BudgetError):
        ledger.commit(res, 0, SEM)
    with pytest.raises(BudgetError):
        ledger.note_infrastructure_attempt(res, 0)


def test_open_reservations_violate_the_closed_invariants_until_released():
    ledger = BudgetLedger(4)
    res = ledger.reserve(3)
    ledger.commit(res, 0, S)
    assert ledger.snapshot().violations() == ["reserved=2 (open reservations)"]
    assert ledger.release(res) == 2
    assert ledger.snapshot().violations() == []
    assert ledger.snapshot().charged == 1


def test_budget_must_be_positive():
    with pytest.raises(BudgetError):
        BudgetLedger(0)


# An outcome schedule for one slot: number of infra failures before the final outcome (<= 2 retries).
slot_outcome = st.tuples(st.integers(min_value=0, max_value=3), st.sampled_from([S, SEM]))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(budget=st.integers(min_value=1, max_value=60),
       batches=st.lists(st.lists(slot_outcome, min_size=0, max_size=12), min_size=1, max_size=15),
       interleave=st.randoms(use_true_random=False))
def test_ledger_laws_under_random_fault_schedules(budget, batches, interleave):
    ledger = BudgetLedger(budget)
    open_work = []
    for batch in batches:
        res = ledger.reserve(len(batch))
        assert res.granted == min(len(batch), max(0, ledger.maximum - ledger.snapshot().charged
                                                  - (ledger.snapshot().reserved - res.granted)))
        for slot in range(res.granted):
            failures, final = batch[slot]
            open_work.append((res, slot, failures, final))
        interleave.shuffle(open_work)  # completion order is arbitrary
        # complete a random prefix now, the rest later (concurrency)
        cut = interleave.randint(0, len(open_work))
        for res_, slot, failures, final in open_work[:cut]:
            _finish(ledger, res_, slot, failures, final)
        open_work = open_work[cut:]
        assert ledger.snapshot().charged <= budget
    for res_, slot, failures, final in open_work:
        _finish(ledger, res_, slot, failures, final)
    snap = ledger.snapshot()
    assert snap.violations() == []
    assert snap.charged <= budget
    assert snap.charged == snap.successful + snap.semantic_failures
    assert snap.attempted == snap.charged + snap.infrastructure_failures


def _finish(ledger, res, slot, failures, final):
    for _ in range(min(failures, 3)):
        ledger.note_infrastructure_attempt(res, slot)
    ledger.commit(res, slot, INFRA if failures >= 3 else final)
