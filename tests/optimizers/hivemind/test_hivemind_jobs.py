"""HiveMind jobs end to end on the simulated endpoint at the default budget (600): a strictly better incumbent
deployed with a 4-agent centralized BFCL team and a 4-agent centralized HotpotQA team (the official layout read by
the real loader), a closed ledger, charged <= 600, every optimize rollout's mask acknowledged by the runtime in its
record, no mask in final validation or test, lessons appended under the header; reflection recorded at T 0.7,
uncharged; the smallest budget (protocol 8.9: centralized 10) refused without --allow-small-budget; a framework
runtime refused with one line."""

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
from optimizers.hivemind.lessons import LESSONS_HEADER
from tests.optimizers.hotpotqa_layout import write_hotpotqa_layout
from tests.optimizers.optjob import read
from tests.optimizers.test_jobs import check_closed_ledger

pytestmark = pytest.mark.anyio

BFCL = "task=bfcl,topology=centralized,team_size=4"


def cfg_for(out: Path, cell: str, budget: int = 600, **kw) -> JobConfig:
    cfg = build_config(cell=cell, method="hivemind", seed=0, out=str(out), budget=budget, task_endpoints=None,
                       model_id=None, concurrency=32, quiet=True, **{"data_dir": None, **kw})
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})


def rollout_annotations(db: Path) -> list[dict]:
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT record FROM rollouts").fetchall()
    finally:
        conn.close()
    return [json.loads(text) for (text,) in rows]


def check_job(out: Path) -> dict:
    for name in ("job.json", "optimization.json", "selection.json", "test.json"):
        assert verify_seal(read(out, name)), name
    opt = read(out, "optimization.json")
    check_closed_ledger(opt["budget"], 600)
    assert opt["status"] == "completed" and opt["stop_reason"] == "budget"
    selection = read(out, "selection.json")
    assert selection["selected_candidate"] == "incumbent"
    assert selection["incumbent_validation_score"] > selection["baseline_validation_score"]
    assert len(read(out, "optimization/records.jsonl")) == opt["budget"]["charged"]
    reflection = opt["usage"]["reflection"]
    assert set(reflection["by_purpose"]) == {"hivemind.lessons"} and reflection["model_calls"] >= 1
    roles = opt["incumbent_bundle"]["roles"]
    assert any(LESSONS_HEADER in p for p in roles.values())
    records = rollout_annotations(out / "card.sqlite")
    masked = [r for r in records if "optimizer_control" in r["metadata"]]
    assert masked and all(r["phase"] == "optimize" and r["metadata"]["optimizer_control"]["acknowledged"]
                          for r in masked)
    assert all("optimizer_control" not in r["metadata"] for r in records if r["phase"] != "optimize")
    return opt


@pytest.mark.slow
async def test_bfcl_centralized_team_deploys_a_strictly_better_incumbent(tmp_path):
    await run_job(cfg_for(tmp_path / "job", BFCL))
    check_job(tmp_path / "job")


@pytest.mark.slow
async def test_hotpotqa_centralized_team_deploys_a_strictly_better_incumbent(tmp_path):
    data_dir, wiki_dir = write_hotpotqa_layout(tmp_path / "hotpotqa")
    await run_job(cfg_for(tmp_path / "job", "task=hotpotqa,topology=centralized,team_size=4",
                          data_dir=str(data_dir), dataset_options={"wiki_dir": str(wiki_dir)}))
    check_job(tmp_path / "job")


async def test_below_the_smallest_budget_is_refused_without_allow_small_budget(tmp_path):
    with pytest.raises(UsageError, match="smallest useful budget \\(10\\)"):
        await run_job(cfg_for(tmp_path / "job", BFCL, budget=9))
    assert not (tmp_path / "job" / "optimization.json").exists()


@pytest.mark.parametrize("cell", ["task=bfcl,topology=centralized,framework=autogen",
                                  "task=bfcl,topology=centralized,framework=langgraph"])
def test_a_framework_runtime_is_refused_with_one_line(tmp_path, cell):
    with pytest.raises(UsageError, match="the (autogen|langgraph) runtime does not honour") as err:
        cfg_for(tmp_path / "job", cell)
    assert "\n" not in str(err.value)


def test_a_topology_that_does_not_claim_masks_is_refused(tmp_path):
    with pytest.raises(UsageError, match="topology single does not honour"):
        cfg_for(tmp_path / "job", "task=bfcl,topology=single", allow_any_cell=True)
