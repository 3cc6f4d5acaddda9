"""Bounded memory (issue W item 7): what a phase keeps of every rollout it ran holds none of the texts the rollout
produced, in every topology. The optimization journal (engine/job/optimization.LedgerRunner.records) and the
evaluations' records (engine/job/evaluation) keep scores, statuses and usage; the final output, each role's
output and the last tool result live in the store only (core.models.RolloutRecord.without_outputs). Before, the
topology's `role_outputs` stayed in every kept record: a 600-rollout job with 1 MB responses peaked at 686 MB.
bench/endurance.py --single-only prints the peak RSS and the store bytes per response."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.models import AgentOutput, RolloutRecord, RolloutStatus
from engine.job import evaluation
from engine.job.optimization import LedgerRunner
from engine.sim.server import SimServer
from tests.conftest import make_policy
from tests.engine.faults.matrix import run_small, small_bench

PAD = 100_000


def longest_text(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((longest_text(v) for v in value.values()), default=0)
    if isinstance(value, list | tuple):
        return max((longest_text(v) for v in value), default=0)
    return 0


@pytest.mark.slow
@pytest.mark.parametrize("topology,team_size", [("single", 1), ("independent", 2), ("sequential", 2),
                                                ("centralized", 2), ("decentralized", 2)])
def test_kept_records_hold_no_produced_text(tmp_path: Path, monkeypatch, topology: str, team_size: int):
    journals: list[LedgerRunner] = []
    kept: list[RolloutRecord] = []
    real_init, real_slim = LedgerRunner.__init__, evaluation._slim

    def init(self: LedgerRunner, **kw: Any) -> None:
        real_init(self, **kw)
        journals.append(self)

    def slim(record: RolloutRecord, keep_outputs: bool) -> RolloutRecord:
        out = real_slim(record, keep_outputs)
        kept.append(out)
        return out

    monkeypatch.setattr(LedgerRunner, "__init__", init)
    monkeypatch.setattr(evaluation, "_slim", slim)
    server = SimServer(make_policy(small_bench()), pad_bytes=PAD).start()
    try:
        run_small(tmp_path / "job", server.base_url, topology, team_size)
    finally:
        server.stop()
    kept += [rec for journal in journals for rec, _ in journal.records]
    assert journals and len(kept) > 10
    assert all(rec.final_output is None for rec in kept)
    assert max(longest_text(rec.model_dump(mode="json")) for rec in kept) < PAD // 10


def test_without_outputs_keeps_everything_else_and_leaves_the_record_alone():
    big = "x" * 1000
    record = RolloutRecord(
        rollout_id="r", example_id="e", phase="optimize", status=RolloutStatus.SUCCESS, score=1.0, request_seed=1,
        bundle_sha256="b", final_output=AgentOutput(text=big),
        metadata={"position": 3, "topology": {"role_outputs": {"solver": big}, "last_tool_result": big,
                                              "vote": {"winner_key": "a"}}})
    slim = record.without_outputs()
    assert slim.final_output is None
    assert slim.metadata == {"position": 3, "topology": {"vote": {"winner_key": "a"}}}
    assert slim.model_dump(exclude={"final_output", "metadata"}) == record.model_dump(
        exclude={"final_output", "metadata"})
    assert record.final_output is not None and record.metadata["topology"]["role_outputs"] == {"solver": big}
    plain = record.model_copy(update={"metadata": {"position": 3}})
    assert plain.without_outputs().metadata == {"position": 3}
