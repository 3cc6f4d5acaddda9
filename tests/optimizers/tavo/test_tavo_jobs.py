"""TAVO jobs end to end on the simulated endpoint at the default budget (600): a strictly better incumbent deployed
with a 4-agent centralized BFCL team and a 4-stage sequential HotpotQA team (the official layout read by the real
loader), a closed ledger, charged <= 600, sub-trajectory judge calls recorded under the judge component at T 0.3,
reflection at T 0.5, none charged; a non-default mode runs and is marked non-conformant; below the smallest
budget the job is refused without --allow-small-budget."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from core.canonical import verify_seal
from core.errors import UsageError
from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job
from engine.runner import RetryPolicy
from tests.optimizers.hotpotqa_layout import write_hotpotqa_layout
from tests.optimizers.optjob import read
from tests.optimizers.test_jobs import check_closed_ledger

pytestmark = pytest.mark.anyio


def cfg_for(out: Path, cell: str, budget: int = 600, **kw) -> JobConfig:
    cfg = build_config(cell=cell, method="tavo", seed=0, out=str(out), budget=budget, task_endpoints=None,
                       model_id=None, concurrency=32, quiet=True, **{"data_dir": None, **kw})
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})


def component_params(db: Path, component: str) -> list[dict]:
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT payload FROM events WHERE event_type='model_call'").fetchall()
    finally:
        conn.close()
    return [p["params"] for (text,) in rows if (p := json.loads(text)).get("component") == component]


def check_job(out: Path) -> dict:
    for name in ("job.json", "optimization.json", "selection.json", "test.json"):
        assert verify_seal(read(out, name)), name
    opt = read(out, "optimization.json")
    check_closed_ledger(opt["budget"], 600)
    assert opt["status"] == "completed" and opt["stop_reason"] in {"patience", "max_rounds", "budget"}
    selection = read(out, "selection.json")
    assert selection["selected_candidate"] == "incumbent"
    assert selection["incumbent_validation_score"] > selection["baseline_validation_score"]
    assert len(read(out, "optimization/records.jsonl")) == opt["budget"]["charged"]
    judge = opt["usage"]["judge"]
    assert judge["model_calls"] >= 1 and set(judge["by_purpose"]) == {"tavo.subtrajectory"}
    params = component_params(out / "card.sqlite", "judge")
    assert len(params) == judge["model_calls"] and all(p["temperature"] == 0.3 for p in params)
    reflection = opt["usage"]["reflection"]
    assert {"tavo.meta_knowledge", "tavo.overlay"} <= set(reflection["by_purpose"])
    assert all(p["temperature"] == 0.5 for p in component_params(out / "card.sqlite", "reflection"))
    roles = opt["incumbent_bundle"]["roles"]
    assert len(roles) == 4 and all("## Shared verbalized policy (TAVO)" in p for p in roles.values())
    return opt


@pytest.mark.slow
async def test_bfcl_centralized_team_deploys_a_strictly_better_incumbent(tmp_path):
    await run_job(cfg_for(tmp_path / "job", "task=bfcl,topology=centralized,team_size=4"))
    check_job(tmp_path / "job")


@pytest.mark.slow
async def test_hotpotqa_sequential_team_deploys_a_strictly_better_incumbent(tmp_path):
    data_dir, wiki_dir = write_hotpotqa_layout(tmp_path / "hotpotqa")
    await run_job(cfg_for(tmp_path / "job", "task=hotpotqa,topology=sequential,team_size=4",
                          data_dir=str(data_dir), dataset_options={"wiki_dir": str(wiki_dir)}))
    check_job(tmp_path / "job")
    assert "method_option" not in " ".join(read(tmp_path / "job", "job.json")["nonconformance_reasons"])


@pytest.mark.slow
async def test_a_non_default_mode_runs_and_is_marked_nonconformant(tmp_path):
    out = tmp_path / "job"
    await run_job(cfg_for(out, "task=bfcl,topology=centralized,team_size=4",
                          method_options={"mode": "tavo-paper-reproduction", "credit": "0"}))
    job = read(out, "job.json")
    assert {"method_option_mode_tavo-paper-reproduction", "method_option_credit_0"} <= set(
        job["nonconformance_reasons"])
    opt = read(out, "optimization.json")
    check_closed_ledger(opt["budget"], 600)
    assert opt["usage"]["judge"]["model_calls"] == 0  # no credit: no judge call
    assert "tavo.refine" in opt["usage"]["reflection"]["by_purpose"]


async def test_below_the_smallest_budget_is_refused_without_allow_small_budget(tmp_path):
    with pytest.raises(UsageError, match="smallest useful budget \\(12\\)"):
        await run_job(cfg_for(tmp_path / "job", "task=bfcl,topology=centralized,team_size=4", budget=11))
    assert not (tmp_path / "job" / "optimization.json").exists()


def test_an_unknown_option_or_value_is_one_line_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no option 'beam'"):
        cfg_for(tmp_path / "a", "task=bfcl,topology=centralized,team_size=4", method_options={"beam": "2"})
    with pytest.raises(UsageError, match="expected one of"):
        cfg_for(tmp_path / "b", "task=bfcl,topology=centralized,team_size=4", method_options={"mode": "x"})
