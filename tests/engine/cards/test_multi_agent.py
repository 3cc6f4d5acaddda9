"""A 4-agent job's card (read edges between agent turns) exports, validates and reproduces result.json."""

from __future__ import annotations

import pytest

from engine.cards.bundle import Bundle
from engine.cards.export import export_card
from engine.cards.rescore import run_rule
from engine.cards.validate import validate_bundle
from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job
from engine.runner import RetryPolicy
from tests.conftest import start_sim
from tests.engine.cards.cardutil import lines
from tests.fakebench import FakeBench
from topologies.registry import TOPOLOGIES

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")


@pytest.mark.anyio
@pytest.mark.skipif("decentralized" not in TOPOLOGIES, reason="no decentralized topology registered")
async def test_decentralized_card(tmp_path):
    bench = FakeBench(n_train=12, n_validation=8, n_test=10)
    bench.name = "gpqa"  # type: ignore[misc]  # the gpqa team spec applies; the rows stay the fake sums
    server = start_sim(bench)
    try:
        cfg = build_config(cell="task=gpqa,topology=decentralized,team_size=4", method="identity", seed=1,
                           out=str(tmp_path / "job"), budget=600, task_endpoints=[server.base_url],
                           model_id="test-model", data_dir=None, concurrency=8, quiet=True, request_timeout=5.0)
        result = await run_job(JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)}), bench)
    finally:
        server.stop()
    bundle = export_card(tmp_path / "job", tmp_path / "card")
    assert validate_bundle(Bundle.load(tmp_path / "card")) == []
    assert lines(bundle, "edges") and {n["level"] for n in lines(bundle, "nodes")} == {0, 1, 2}
    values = run_rule(bundle, "mpb.protocol").result.values
    assert (values["baseline_mean"], values["deployed_mean"], values["delta_pp"]) == (
        result.test.baseline_mean, result.test.deployed_mean, result.test.delta_pp)
