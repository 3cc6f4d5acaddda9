"""Test rows are unreachable from any optimizer: the runner refuses them, the data layer keeps them sealed."""

from __future__ import annotations

import json

from collections.abc import Sequence
from pathlib import Path

import pytest

from core.errors import OptimizationFailed, ContractError, SealedSplitError
from core.models import PromptBundle, Row
from core.optimizer import OptimizerResult, OptimizerRunner
from engine.job.data import JobData
from optimizers import registry
from tests.conftest import start_sim
from tests.optimizers.optjob import bench, run


class _Peeker:
    smallest_useful_budget = 1

    def __init__(self, out: Path):
        self.out = out
        self.fake = bench()

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        return "peeks at the test split"


class RunsATestRow(_Peeker):
    name = "runs_test_row"

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> OptimizerResult:
        await runner.run_batch(train[:2], seed_bundle, 0)  # allowed
        test_row = self.fake.load_rows([self.fake.splits().test[0]])[0]
        await runner.run_batch([validation[0], test_row], seed_bundle, 1)
        raise AssertionError("unreachable")


class LoadsTheTestSplit(_Peeker):
    name = "loads_test_split"

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> OptimizerResult:
        JobData(self.fake, None, self.out).test()
        raise AssertionError("unreachable")


@pytest.mark.parametrize("method,error,match", [
    (RunsATestRow, ContractError, "not a train/validation row"),
    (LoadsTheTestSplit, SealedSplitError, "no selection.json"),
])
def test_an_optimizer_cannot_reach_test_rows(tmp_path, monkeypatch, method, error, match):
    out = tmp_path / "job"
    monkeypatch.setitem(registry.METHODS, method.name, lambda: method(out))
    server = start_sim(bench())
    try:
        # section 6: a method that breaks the contract is a contract_failure; optimization.json records it and the
        # job stops before selection (so before any test row could be handed out)
        with pytest.raises(OptimizationFailed, match=match) as stopped:
            run(out, server.base_url, method=method.name, allow_any_cell=True)  # a test-only method: off-grid
        test_ids = set(bench().splits().test)
        served = {e["row_id"] for e in server.log}
    finally:
        server.stop()
    assert stopped.value.failure_kind == "contract_failure" and error.__name__ in str(stopped.value)
    assert not served & test_ids, "a test row reached the endpoint"
    recorded = json.loads((out / "optimization.json").read_text())
    assert recorded["failure_kind"] == "contract_failure" and recorded["error_type"] == error.__name__
    assert not (out / "selection.json").exists() and not (out / "test.json").exists()
