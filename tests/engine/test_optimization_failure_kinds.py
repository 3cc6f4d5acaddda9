"""Protocol-v1 section 6: an optimization that fails records its failure_kind in optimization.json.
infrastructure_invalid is reportable (the seed bundle is kept, the job goes on); contract_failure, program_failure
and ambiguous_external (ledger reservations still open) stop the job, before selection, now and on every re-run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import anyio
import pytest

from core.errors import ContractError, OptimizationFailed
from core.models import PromptBundle, Row
from core.optimizer import OptimizerRunner
from optimizers import registry
from tests.conftest import start_sim
from tests.engine.jobutil import config
from engine.job.run_job import run_job
from tests.fakebench import FakeBench


class _Failing:
    """A method that fails the way its `mode` says, after spending a few rollouts. (ambiguous_external needs
    reservations still open when the failure reaches the job; the runner closes every reservation on every exit
    path, so in this engine it is reachable only through a ledger bug: core/test_failure_kinds.py covers the
    classification.)"""

    name = "failing"
    smallest_useful_budget = 1
    mode = "program"

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        return f"failing ({self.mode})"

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> Any:
        await runner.run_batch(list(train[:2]), seed_bundle, iteration=0)
        if self.mode == "program":
            raise RuntimeError("a bug in the method")
        if self.mode == "contract":
            raise ContractError("the method broke a contract")

        async def fail_in_my_task_group() -> None:
            raise ContractError("a contract broken inside the method's own task group")

        async with anyio.create_task_group() as tg:
            tg.start_soon(fail_in_my_task_group)


@pytest.fixture
def failing(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(registry.METHODS, "failing", _Failing)
    return _Failing


def _run(out: Path, url: str) -> dict[str, Any]:
    bench = FakeBench(n_train=12, n_validation=20, n_test=30)
    return anyio.run(run_job, config(out, url, method="failing", budget=20), bench).to_json()


@pytest.mark.parametrize("mode,kind", [("program", "program_failure"), ("contract", "contract_failure"),
                                       ("grouped", "contract_failure")])
def test_stopping_failure_kinds_are_recorded_and_stop_the_job(tmp_path, failing, mode, kind):
    failing.mode = mode
    server = start_sim(FakeBench(n_train=12, n_validation=20, n_test=30))
    out = tmp_path / "job"
    try:
        with pytest.raises(OptimizationFailed) as first:
            _run(out, server.base_url)
        sent = len(server.log)
        with pytest.raises(OptimizationFailed) as again:  # a re-run stops the same way and sends nothing
            _run(out, server.base_url)
        assert len(server.log) == sent
    finally:
        server.stop()
    assert first.value.failure_kind == again.value.failure_kind == kind
    optimization = json.loads((out / "optimization.json").read_text())
    assert optimization["status"] == "failed" and optimization["failure_kind"] == kind
    assert optimization["error_type"] in ("RuntimeError", "ContractError") and optimization["error"]
    assert optimization["incumbent_bundle"] == optimization["seed_bundle"]
    assert not (out / "selection.json").exists() and not (out / "result.json").exists()
