"""Runner: input order, seeds independent of concurrency, budget exhaustion, ledger laws under random faults."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.ledger import BudgetLedger
from core.models import PromptBundle, RolloutStatus
from core.protocol import OPTIMIZATION_DECODING
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts
from engine.runner import BUDGET_EXHAUSTED_ERROR, RetryPolicy, RolloutSpec, Runner
from engine.sim.faults import FAULT_KINDS, FaultPlan
from engine.store import Store
from tests.conftest import start_sim
from tests.fakebench import FakeBench
from topologies.single import Single

BUNDLE = PromptBundle(roles={"solver": "You add numbers."})
DECODING = OPTIMIZATION_DECODING


def specs(bench: FakeBench, n: int, tag: str = "t") -> list[RolloutSpec]:
    rows = bench.load_rows(list(bench.splits().train[:n]))
    return [RolloutSpec(row=r, bundle=BUNDLE, seed=1000 + i, phase="optimize", rollout_key=f"{tag}:{i}:{r.id}",
                        position=i) for i, r in enumerate(rows)]


async def run_batch(url: str, db: Path, batch: list[RolloutSpec], *, concurrency: int,
                    ledger: BudgetLedger | None = None, timeout: float = 5.0):
    async with AsyncExitStack() as stack:
        pool = EndpointPool([Endpoint(url, "test-model", capacity=concurrency, timeouts=Timeouts(read=timeout))])
        stack.push_async_callback(pool.aclose)
        store = await stack.enter_async_context(Store(db, run_id="r"))
        await store.add_node(node_id="run", parent_id=None, instance_key="r", task_key="job", status="running",
                             worker_key=None, level=0, actor="t")
        runner = Runner(store=store, pool=pool, bench=FakeBench(n_train=40), topology=Single(), run_node="run",
                        retry=RetryPolicy(base_delay=0.0), concurrency=concurrency)
        return await runner.run_batch(batch, DECODING, ledger)


def test_records_in_input_order_and_seeds_independent_of_concurrency(tmp_path):
    bench = FakeBench(n_train=40)
    batch = specs(bench, 40)
    results, seeds = {}, {}
    for c in (1, 32):
        server = start_sim(bench, delay_s=0.002)
        try:
            results[c] = anyio.run(lambda: run_batch(server.base_url, tmp_path / f"c{c}.sqlite", batch,
                                                     concurrency=c))
            seeds[c] = sorted((e["row_id"], e["seed"]) for e in server.log)
        finally:
            server.stop()
    assert [r.example_id for r in results[1]] == [s.row.id for s in batch]
    assert [r.example_id for r in results[32]] == [s.row.id for s in batch]
    assert seeds[1] == seeds[32]
    strip = lambda rs: [(r.example_id, r.status, r.score, r.request_seed) for r in rs]  # noqa: E731
    assert strip(results[1]) == strip(results[32])


def test_rows_past_the_cap_come_back_budget_exhausted_and_uncharged(tmp_path):
    bench = FakeBench(n_train=40)
    server = start_sim(bench)
    ledger = BudgetLedger(7)
    try:
        records = anyio.run(lambda: run_batch(server.base_url, tmp_path / "s.sqlite", specs(bench, 10),
                                              concurrency=4, ledger=ledger))
    finally:
        server.stop()
    assert len(server.log) == 7
    assert [r.budget_exhausted for r in records] == [False] * 7 + [True] * 3
    for rec in records[7:]:
        assert rec.status is RolloutStatus.SEMANTIC_FAILURE and rec.score == 0.0 and not rec.charged
        assert rec.error == BUDGET_EXHAUSTED_ERROR
    snap = ledger.snapshot()
    assert snap.charged == 7 and snap.violations() == []


def test_three_failed_attempts_give_an_uncharged_infrastructure_failure(tmp_path):
    bench = FakeBench(n_train=40)
    server = start_sim(bench, faults=FaultPlan(rates={"http_503": 1.0}))
    ledger = BudgetLedger(5)
    try:
        records = anyio.run(lambda: run_batch(server.base_url, tmp_path / "s.sqlite", specs(bench, 2),
                                              concurrency=2, ledger=ledger))
        log = server.log
    finally:
        server.stop()
    assert [r.status for r in records] == [RolloutStatus.INFRASTRUCTURE_FAILURE] * 2
    assert all(r.attempts == 3 and not r.charged for r in records)
    by_row = {}
    for e in log:
        by_row.setdefault(e["row_id"], set()).add(e["seed"])
    assert all(len(s) == 1 for s in by_row.values()), "retries reuse the same request seed"
    assert len(log) == 6
    snap = ledger.snapshot()
    assert (snap.charged, snap.attempted, snap.infrastructure_failures, snap.remaining) == (0, 6, 6, 5)
    assert snap.violations() == []


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(1, 30), sizes=st.lists(st.integers(0, 12), min_size=1, max_size=4),
       rate=st.sampled_from([0.0, 0.2, 0.5]), kind=st.sampled_from([k for k in FAULT_KINDS if k != "slow"]),
       fault_seed=st.integers(0, 1000), concurrency=st.sampled_from([1, 4, 32]))
def test_ledger_laws_hold_under_random_fault_schedules_and_concurrency(tmp_path_factory, budget, sizes, rate,
                                                                       kind, fault_seed, concurrency):
    bench = FakeBench(n_train=40)
    server = start_sim(bench, faults=FaultPlan(rates={kind: rate}, seed=fault_seed))
    ledger = BudgetLedger(budget)
    db = tmp_path_factory.mktemp("ledger") / "s.sqlite"
    all_records = []
    try:
        for b, size in enumerate(sizes):
            batch = specs(bench, size, tag=f"b{b}")
            all_records += anyio.run(lambda: run_batch(server.base_url, db, batch, concurrency=concurrency,
                                                       ledger=ledger))
    finally:
        server.stop()
    snap = ledger.snapshot()
    assert snap.violations() == []
    assert snap.charged <= budget
    assert snap.charged == snap.successful + snap.semantic_failures
    assert snap.attempted == snap.charged + snap.infrastructure_failures
    assert snap.charged == sum(r.charged for r in all_records)
    assert snap.charged == sum(1 for r in all_records if r.usable)
