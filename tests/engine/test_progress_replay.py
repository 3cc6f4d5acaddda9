"""A resumed job's progress: rollouts replayed from the store are counted apart and never in a rate or ETA (they
would show the speed of reading the store, not of the endpoint); a smoke run's lines carry its prefix."""

from __future__ import annotations

from structlog.testing import capture_logs

from core.ledger import BudgetLedger
from core.models import RolloutRecord, RolloutStatus
from engine.progress import Progress


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _record(replayed: bool = False, status: RolloutStatus = RolloutStatus.SUCCESS) -> RolloutRecord:
    return RolloutRecord(rollout_id="r", example_id="e", phase="test", status=status, score=1.0, request_seed=1,
                         bundle_sha256="b", replayed=replayed)


def test_an_evaluation_rate_and_eta_exclude_replayed_rollouts():
    clock = _Clock()
    progress = Progress(None, quiet=False, interval=5.0, clock=clock, prefix="[smoke 3] ")
    with capture_logs() as events:
        progress.begin("test evaluation", 20)
        for _ in range(10):  # the journal's first 10 rows, replayed at once
            progress(_record(replayed=True))
        for _ in range(5):  # then live rollouts, one every 2 s
            clock.now += 2.0
            progress(_record())
        progress.end()
    lines = [e for e in events if e.get("kind") == "progress"]
    last = lines[-1]
    assert last["done"] == 15 and last["replayed"] == 10
    assert last["rate_per_s"] == 0.5  # 5 live in 10 s (counting the 10 replayed would say 1.5/s)
    assert last["eta_s"] == 10.0  # 5 left at 0.5/s (with the replayed ones: 3.3 s)
    assert all(e["event"].startswith("progress: [smoke 3] test evaluation") for e in lines)
    assert "replayed=10" in last["event"]
    assert progress.replayed_rollouts == 10


def test_optimize_eta_counts_live_charged_rollouts_only():
    clock = _Clock()
    ledger = BudgetLedger(100)
    progress = Progress(ledger, quiet=False, interval=5.0, clock=clock)
    reservation = ledger.reserve(40)
    with capture_logs() as events:
        for slot in range(30):  # replayed from the store: charged again in this process's ledger, no time
            ledger.commit(reservation, slot, RolloutStatus.SUCCESS)
            progress(_record(replayed=True))
        for slot in range(30, 40):  # live, one per second
            clock.now += 1.0
            ledger.commit(reservation, slot, RolloutStatus.SUCCESS)
            progress(_record())
    last = [e for e in events if e.get("kind") == "progress"][-1]
    assert last["charged"] == 40 and last["replayed"] == 30
    assert last["eta_s"] == 60.0  # 60 left at 1 live rollout/s (counting the replayed ones: 15 s)
    assert "replayed=30" in last["event"] and progress.replayed_rollouts == 30


def test_a_fresh_job_shows_no_replayed_count():
    clock = _Clock()
    progress = Progress(None, quiet=False, interval=5.0, clock=clock)
    with capture_logs() as events:
        progress.begin("validation evaluation", 2)
        clock.now += 1.0
        progress(_record())
        clock.now += 1.0
        progress(_record())
        progress.end()
    last = [e for e in events if e.get("kind") == "progress"][-1]
    assert last["replayed"] == 0 and "replayed=" not in last["event"] and last["rate_per_s"] == 1.0
    assert progress.replayed_rollouts == 0
