"""A dead endpoint never lets a method loop on uncharged failures: optimization stops as infrastructure-invalid,
the seed bundle is kept, and the test phase is reported invalid rather than scored."""

from __future__ import annotations

from engine.sim.faults import FaultPlan
from tests.conftest import start_sim
from tests.optimizers.optjob import bench, read, run


def test_endpoint_down_gives_infrastructure_invalid_optimization_and_keeps_the_seed(tmp_path):
    server = start_sim(bench(), faults=FaultPlan(rates={"http_503": 1.0}))
    try:
        result = run(tmp_path / "job", server.base_url, method="gepa")
        n_requests = len(server.log)
    finally:
        server.stop()
    optimization = read(tmp_path / "job", "optimization.json")
    assert optimization["status"] == "failed" and optimization["failure_kind"] == "infrastructure_invalid"
    assert optimization["budget"]["charged"] == 0 and optimization["budget"]["reserved"] == 0
    assert optimization["budget"]["attempted"] == optimization["budget"]["infrastructure_failures"] > 0
    selection = read(tmp_path / "job", "selection.json")
    assert selection["fallback_reason"] == "infrastructure_invalid_optimization"
    assert selection["selected_candidate"] == "seed" and selection["incumbent_validation_score"] is None
    test = result["test"]
    assert test["valid_for_aggregation"] is False and test["delta_pp"] is None
    assert test["failure_counts"]["baseline"]["infrastructure_failures"] == 30
    assert n_requests < 600  # bounded: it stopped instead of looping on refunded slots
