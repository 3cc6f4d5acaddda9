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


async def _call(store: Store, execution: str, sequence: int, role: str, content: str, ok: bool = True,
                member: int = 0, turn: int = 0) -> None:
    now = utc_now()
    await store.record_event(execution_id=execution, node_id=f"{execution}/n{sequence}", worker_key=role,
                             sequence=sequence, event_type="model_call", turn_id=None,
                             payload={"role": role, "member": member, "turn": turn,
                                      "request": {"messages": [{"role": "user", "content": f"to {role}"}]},
                                      "response": {"content": content, "tool_calls": []}}, started_at=now,
                             completed_at=now, request_key=f"{execution}-{sequence}", ok=ok)


async def _tool(store: Store, execution: str, sequence: int, node_sequence: int, content: str) -> None:
    now = utc_now()
    await store.record_event(execution_id=execution, node_id=f"{execution}/n{node_sequence}", worker_key="w",
                             sequence=sequence, event_type="tool_result", turn_id=None,
                             payload={"tool_name": "search", "content": content, "is_error": False},
                             started_at=now, completed_at=now)


async def test_transcripts_read_every_turn_of_many_rollouts_in_one_trip(tmp_path: Path):
    from core.transcript import ToolReply

    big = "y" * 300_000  # stored as a blob reference, resolved on read
    async with Store(tmp_path / "card.sqlite", run_id="x") as store:
        await _call(store, "r1#a1", 0, "solver", "first")
        await _call(store, "r1#a1", 1, "critic", "fine", turn=1)
        await _call(store, "r1#a2", 0, "solver", "second")  # a later attempt wins
        await _tool(store, "r1#a2", 1, 0, "a page")
        await _call(store, "r1#a2", 2, "critic", "broken", ok=False)  # a failed call is no turn
        await _call(store, "r10#a1", 0, "solver", big, member=2)  # r10 is not r1's
        found = await store.transcripts(["r1", "r10", "r2"])
    assert [t.rollout_id for t in found] == ["r1", "r10", "r2"]
    r1, r10, r2 = found
    assert r1.role_outputs() == {"solver": "second", "critic": "fine"} and list(r1.role_outputs()) == ["solver",
                                                                                                        "critic"]
    assert [(t.role, t.turn, t.attempt, t.reply) for t in r1.turns] == [
        ("solver", 0, "r1#a1", "first"), ("critic", 1, "r1#a1", "fine"), ("solver", 0, "r1#a2", "second")]
    assert r1.turns[2].tool_replies == (ToolReply("search", "a page"),)
    assert r1.turns[0].messages == ({"role": "user", "content": "to solver"},)
    assert [t.reply for t in r1.final_attempt()] == ["second"]
    assert r10.role_outputs() == {"solver": big} and r10.turns[0].member == 2
    assert r2.turns == () and r2.role_outputs() == {}


class _Store:
    """The store's transcript read, counted."""

    def __init__(self) -> None:
        self.batched: list[list[str]] = []

    async def transcripts(self, rollout_ids: list[str]) -> list[object]:
        from tests.optimizers.fakes import transcript_of

        self.batched.append(list(rollout_ids))
        return [transcript_of(r, {"solver": f"said {r}"}) for r in rollout_ids]

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


async def test_the_optimize_phase_reads_transcripts_only_when_asked_in_one_trip_per_batch():
    from core.ledger import BudgetLedger
    from core.models import PromptBundle, Row
    from engine.job.optimization import LedgerRunner
    from optimizers.transcripts import RoleOutputs

    runner = _Runner()
    facade = LedgerRunner(runner=runner, ledger=BudgetLedger(100), cell_id="c", optimizer_seed=0,  # type: ignore
                          roles=["solver"], allowed_ids={"e0", "e1"})
    rows = [Row(id="e0", dataset="toy", task={"q": 0}), Row(id="e1", dataset="toy", task={"q": 1})]
    bundle = PromptBundle(roles={"solver": "be right"})
    first = await facade.run_batch(rows, bundle, 0)
    assert runner.store.batched == []  # a method that never asks costs no read
    outputs = RoleOutputs(facade)
    await outputs.load(first)
    assert runner.store.batched == [["b1r0", "b1r1"]]
    assert [outputs(r) for r in first] == [{"solver": "said b1r0"}, {"solver": "said b1r1"}]
    await outputs.load(first)  # loaded once
    assert runner.store.batched == [["b1r0", "b1r1"]]
    second = await facade.run_batch(rows, bundle, 1)
    with pytest.raises(Exception, match="not loaded"):
        outputs(second[0])
