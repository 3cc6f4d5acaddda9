"""GEPA and MIPRO jobs end to end on the simulated endpoint (reflection served by the same server)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from core.simulation import FailureMode
from core.canonical import verify_seal
from core.errors import UsageError
from tests.conftest import start_sim
from tests.fakebench import FakeBench
from tests.optimizers.optjob import bench, read, run

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

REMEDIES = [m.remedy for m in FakeBench.failure_modes]


class DeafBench(FakeBench):
    """Scorer feedback the simulated reflection model never recognises: no proposal ever changes a prompt."""

    failure_modes = tuple(FailureMode(m.name, r"NEVER-MATCHES-ANYTHING", m.remedy, m.rate)
                          for m in FakeBench.failure_modes)


def check_closed_ledger(budget: dict, maximum: int) -> None:
    assert budget["maximum"] == maximum and budget["reserved"] == 0 and budget["charged"] <= maximum
    assert budget["charged"] == budget["successful"] + budget["semantic_failures"]
    assert budget["attempted"] == budget["charged"] + budget["infrastructure_failures"]
    assert budget["remaining"] == maximum - budget["charged"]


def reflection_events(db: Path) -> list[tuple[str, dict]]:
    conn = sqlite3.connect(str(db))
    rows = conn.execute("SELECT e.node_id, e.payload, n.parent_id FROM events e JOIN nodes n ON n.node_id = e.node_id"
                        " WHERE e.event_type='model_call'").fetchall()
    conn.close()
    out = []
    for node_id, payload, parent in rows:
        data = json.loads(payload)
        if data.get("component") == "reflection":
            out.append((parent, data))
    return out


@pytest.mark.parametrize("method", ["gepa", "mipro"])
def test_method_finds_and_deploys_a_strictly_better_bundle(tmp_path, method):
    server = start_sim(bench())
    try:
        result = run(tmp_path / "job", server.base_url, method=method)
    finally:
        server.stop()
    out = tmp_path / "job"
    for name in ("job.json", "optimization.json", "selection.json", "test.json"):
        assert verify_seal(read(out, name)), name
    opt = read(out, "optimization.json")
    check_closed_ledger(opt["budget"], 600)
    assert opt["stop_reason"] in {"rollout_budget_spent", "full_eval_plateau", "num_trials_complete"}
    selection = read(out, "selection.json")
    assert selection["selected_candidate"] == "incumbent" and selection["fallback_reason"] is None
    assert selection["incumbent_validation_score"] > selection["baseline_validation_score"]
    incumbent = opt["incumbent_bundle"]["roles"]["solver"]
    assert any(r in incumbent for r in REMEDIES)
    if method == "mipro":
        assert opt["stop_reason"] == "num_trials_complete"
    # reflection: counted per component, never charged, recorded under the run node with its logical seed
    usage = opt["usage"]["reflection"]
    assert usage["model_calls"] >= 1 and usage["model_id"] == "simulated-reflection"
    events = reflection_events(out / "card.sqlite")
    assert len(events) == usage["model_calls"]
    cell_id = read(out, "job.json")["cell_id"]
    for parent, payload in events:
        assert parent == f"run/{cell_id}"
        params = payload["params"]
        assert params["chat_template_kwargs"] == {"enable_thinking": True} and params["max_tokens"] == 48000
        assert params["temperature"] == 1.0 and params["top_p"] == 1.0 and isinstance(payload["seed"], int)
    curve = read(out, "optimization/learning_curve.jsonl")
    assert [r["rollout_grid"] for r in curve] == list(range(0, 601, 10))
    assert curve[-1]["bundle_hash"] == opt["incumbent_bundle"]["bundle_sha256"]
    assert result["selection"]["selected_candidate"] == "incumbent"


def test_gepa_that_never_improves_spends_exactly_the_budget(tmp_path):
    fake = DeafBench(n_train=12, n_validation=20, n_test=30)
    server = start_sim(fake)
    try:
        result = run(tmp_path / "job", server.base_url, fake=DeafBench(n_train=12, n_validation=20, n_test=30),
                     method="gepa")
    finally:
        server.stop()
    out = tmp_path / "job"
    opt = read(out, "optimization.json")
    assert opt["stop_reason"] == "rollout_budget_spent"
    budget = opt["budget"]
    check_closed_ledger(budget, 600)
    assert budget["charged"] == 600 and budget["budget_exhausted_requests"] == 2  # 20 + 3 x 193 = 599, then 1 of 3
    attempts = read(out, "optimization/attempts.jsonl")
    exhausted = [a for a in attempts if a["budget_exhausted"]]
    assert len(exhausted) == 2 and not any(a["charged"] for a in exhausted)
    assert sum(a["charged"] for a in attempts) == 600
    assert len(read(out, "optimization/records.jsonl")) == 600
    assert read(out, "selection.json")["fallback_reason"] == "validation_tie"
    assert result["optimization"]["budget"]["charged"] == 600


def test_a_small_budget_is_refused_unless_allowed(tmp_path):
    server = start_sim(bench())
    try:
        with pytest.raises(UsageError, match="smallest useful budget \\(26\\)"):  # 20 validation + 2 x 3 (8.9)
            run(tmp_path / "refused", server.base_url, method="gepa", budget=25)
        assert not (tmp_path / "refused").exists()
        with pytest.raises(UsageError, match="smallest useful budget \\(105\\)"):
            run(tmp_path / "refused", server.base_url, method="mipro", budget=104)
        run(tmp_path / "job", server.base_url, method="gepa", budget=25, allow_small_budget=True)
    finally:
        server.stop()
    opt = read(tmp_path / "job", "optimization.json")
    check_closed_ledger(opt["budget"], 25)
    assert opt["budget"]["charged"] == 25 and opt["stop_reason"] == "rollout_budget_spent"
    attempts = read(tmp_path / "job", "optimization/attempts.jsonl")
    assert any(a["budget_exhausted"] and not a["charged"] for a in attempts)


def test_rerun_of_a_finished_gepa_job_sends_nothing(tmp_path):
    server = start_sim(bench())
    try:
        first = run(tmp_path / "job", server.base_url, method="gepa")
        n = len(server.log)
        second = run(tmp_path / "job", server.base_url, method="gepa")
        assert len(server.log) == n
    finally:
        server.stop()
    first["optimization"].pop("elapsed_seconds")
    second["optimization"].pop("elapsed_seconds")
    assert first == second
