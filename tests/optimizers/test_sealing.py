"""Test rows are unreachable from any optimizer: the runner refuses them, the data layer keeps them sealed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from core.errors import ContractError, SealedSplitError
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
        with pytest.raises(error, match=match):
            run(out, server.base_url, method=method.name, allow_any_cell=True)  # a test-only method: off-grid
        test_ids = set(bench().splits().test)
        served = {e["row_id"] for e in server.log}
    finally:
        server.stop()
    assert not served & test_ids, "a test row reached the endpoint"
    assert not (out / "optimization.json").exists() and not (out / "selection.json").exists()
