"""The store's named units of work (engine/store/units.py): what the job and the optimize phase used to write as
SQL of their own, with the same rows as a result."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from engine.store import Store, utc_now

pytestmark = pytest.mark.anyio


async def _node(store: Store, node_id: str, status: str, parent: str | None = "run/x") -> None:
    await store.add_node(node_id=node_id, parent_id=parent, instance_key=node_id, task_key="t", status=status,
                         worker_key=None, level=0 if parent is None else 1, actor="test")


async def test_cancel_running_cancels_every_running_node_but_the_kept_one(tmp_path: Path):
    async with Store(tmp_path / "card.sqlite", run_id="x") as store:
        await _node(store, "run/x", "running", parent=None)
        for node_id, status in (("a", "running"), ("b", "completed"), ("c", "running")):
            await _node(store, node_id, status)
        stale = await store.cancel_running(keep="run/x", actor="engine:job", reason="interrupted",
                                           failure={"kind": "cancelled_by_parent", "message": "process interrupted"})
    assert sorted(stale) == ["a", "c"]
    conn = sqlite3.connect(tmp_path / "card.sqlite")
    try:
        status = dict(conn.execute("SELECT node_id, status FROM nodes").fetchall())
        reasons = conn.execute("SELECT target_id, reason, new_value FROM mutations WHERE mutation_type = "
                               "'node.status_changed' ORDER BY sequence").fetchall()
    finally:
        conn.close()
    assert status == {"run/x": "running", "a": "cancelled", "b": "completed", "c": "cancelled"}
    assert [(t, r) for t, r, _ in reasons] == [("a", "interrupted"), ("c", "interrupted")]
    assert all('"cancelled_by_parent"' in new for _, _, new in reasons)


async def _call(store: Store, execution: str, sequence: int, role: str, content: str, ok: bool = True) -> None:
    now = utc_now()
    await store.record_event(execution_id=execution, node_id=f"{execution}/n{sequence}", worker_key=role,
                             sequence=sequence, event_type="model_call", turn_id=None,
                             payload={"role": role, "response": {"content": content}}, started_at=now,
                             completed_at=now, request_key=f"{execution}-{sequence}", ok=ok)


async def test_role_outputs_reads_the_last_reply_per_role_of_many_rollouts_in_one_trip(tmp_path: Path):
    big = "y" * 300_000  # stored as a blob reference, resolved on read
    async with Store(tmp_path / "card.sqlite", run_id="x") as store:
        await _call(store, "r1#a1", 0, "solver", "first")
        await _call(store, "r1#a1", 1, "critic", "fine")
        await _call(store, "r1#a2", 0, "solver", "second")  # a later attempt wins
        await _call(store, "r1#a2", 1, "critic", "broken", ok=False)  # a failed call is no reply
        await _call(store, "r10#a1", 0, "solver", big)  # r10 is not r1's
        found = await store.role_outputs(["r1", "r10", "r2"])
        assert found == {"r1": {"solver": "second", "critic": "fine"}, "r10": {"solver": big}, "r2": {}}
        assert list(found["r1"]) == ["solver", "critic"]
        assert await anyio.to_thread.run_sync(store.role_outputs_now, "r10") == {"solver": big}


class _Store:
    """The store's two role-output reads, counted."""

    def __init__(self) -> None:
        self.blocking: list[str] = []
        self.batched: list[list[str]] = []

    def role_outputs_now(self, rollout_id: str) -> dict[str, str]:
        self.blocking.append(rollout_id)
        return {"solver": f"said {rollout_id}"}

    async def role_outputs(self, rollout_ids: list[str]) -> dict[str, dict[str, str]]:
        self.batched.append(list(rollout_ids))
        return {r: {"solver": f"said {r}"} for r in rollout_ids}

    async def externalize(self, values: list[object]) -> list[object]:
        return values


class _Runner:
    def __init__(self) -> None:
        self.store = _Store()
        self.batches = 0

    async def run_batch(self, specs, decoding, ledger):  # type: ignore[no-untyped-def]
        from core.models import RolloutRecord, RolloutStatus

        self.batches += 1
        return [RolloutRecord(rollout_id=f"b{self.batches}r{i}", example_id=s.row.id, phase="optimize",
                              status=RolloutStatus.SUCCESS, score=1.0, request_seed=s.seed,
                              bundle_sha256=s.bundle.digest) for i, s in enumerate(specs)]


async def test_the_optimize_phase_reads_role_outputs_per_batch_off_the_loop_once_asked():
    from core.ledger import BudgetLedger
    from core.models import PromptBundle, Row
    from engine.job.optimization import LedgerRunner

    runner = _Runner()
    facade = LedgerRunner(runner=runner, ledger=BudgetLedger(100), cell_id="c", optimizer_seed=0,  # type: ignore
                          roles=["solver"], allowed_ids={"e0", "e1"})
    rows = [Row(id="e0", dataset="toy", task={"q": 0}), Row(id="e1", dataset="toy", task={"q": 1})]
    bundle = PromptBundle(roles={"solver": "be right"})
    first = await facade.run_batch(rows, bundle, 0)
    assert runner.store.batched == []  # a method that never asks costs no read
    assert facade.role_outputs(first[0]) == {"solver": "said b1r0"} and runner.store.blocking == ["b1r0"]
    second = await facade.run_batch(rows, bundle, 1)
    assert runner.store.batched == [["b2r0", "b2r1"]]
    assert [facade.role_outputs(r) for r in second] == [{"solver": "said b2r0"}, {"solver": "said b2r1"}]
    assert facade.role_outputs(first[0]) == {"solver": "said b1r0"}
    assert runner.store.blocking == ["b1r0"]  # every later read came from the batch's one trip
