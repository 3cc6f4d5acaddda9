"""Budget stop labels as protocol-v1 section 6 lists them ("Stop reasons: budget (HiveMind, MAPRO, MASPO),
rollout_budget_spent (GEPA, MIPRO, MASPOB)"); issue 35 item 7."""

from __future__ import annotations

import importlib

import pytest

from optimizers.mapro import Mapro
from tests.optimizers.fakes import FakeRunner, rows, seed_bundle
from tests.optimizers.test_mapro_unit import ScriptedModel

S6 = "protocol-v1 §6 stop reasons"
LABELS = [
    ("gepa", "rollout_budget_spent"),
    ("mipro", "rollout_budget_spent"),
    ("mapro", "budget"),
    ("maspo", "budget"),
]


@pytest.mark.parametrize("method,label", LABELS)
def test_each_method_stops_on_budget_with_the_protocol_label(method, label):
    assert importlib.import_module(f"optimizers.{method}.method").STOP_BUDGET == label, S6


@pytest.mark.anyio
@pytest.mark.parametrize("budget", [1, 5])
async def test_mapro_records_budget_when_its_seed_pass_does_not_fit(budget):
    """protocol-v1 §6 / §8.3: a MAPRO train pass never starts unless it fits; the stop is `budget`."""
    model = ScriptedModel()
    runner = FakeRunner(budget, lambda r, b, i: 0.0)
    result = await Mapro(seed=0, reflection=model, judge=model, probe=model).optimize(
        runner, rows("t", 6), [], seed_bundle(), budget)
    assert result.stop_reason == "budget" and result.artifacts["stop_reason"] == "budget", S6
    assert runner.ledger.snapshot().charged == 0
