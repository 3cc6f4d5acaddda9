"""A failure raised by topology code itself (here: the vote of a team, an agent's scorer-side helper) ends that
rollout's attempt as an infrastructure failure in every multi-agent topology; the job completes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.models import AgentOutput, Row
from tests.conftest import start_sim
from tests.engine.faults.matrix import assert_closed_ledger, assert_store_consistent, cell, small_bench
from tests.engine.jobutil import run
from tests.fakebench import FakeBench


class BrokenVote(FakeBench):
    """vote_key raises for one test row (a bug in vote code), like a KeyError deep in a task group."""

    def __init__(self, broken: str):
        super().__init__(n_train=6, n_validation=4, n_test=6)
        self.name = "gpqa"  # type: ignore[misc]
        self.broken = broken

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        if row.id == self.broken:
            raise KeyError(f"vote table has no entry for {row.id}")
        return super().vote_key(row, output)


@pytest.mark.parametrize("topology", ["independent", "decentralized"])
def test_a_vote_that_raises_is_an_infrastructure_failure_not_a_crash(tmp_path: Path, topology: str):
    broken = small_bench().splits().test[2]
    server = start_sim(small_bench())
    try:
        result = run(tmp_path / "job", server.base_url, BrokenVote(broken), cell=cell(topology, 4), timeout=2.0)
    finally:
        server.stop()
    test = json.loads((tmp_path / "job" / "test.json").read_text())
    statuses = dict(zip(test["example_ids"], test["baseline_status"]))
    assert statuses[broken] == "infrastructure_failure"
    assert all(s != "infrastructure_failure" for i, s in statuses.items() if i != broken)
    assert result["test"]["valid_for_aggregation"] is False  # reported, not hidden
    assert_closed_ledger(tmp_path / "job")
    assert_store_consistent(tmp_path / "job")
    evaluation = json.loads(next(p for p in (tmp_path / "job" / "evaluations").glob("*.json")
                                 if broken in p.read_text()).read_text())
    record = next(r for r in evaluation["records"] if r["example_id"] == broken)
    assert record["attempts"] == 3 and record["error_kind"] == "agent_failure" and "KeyError" in record["error"]
