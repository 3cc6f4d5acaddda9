"""MAPRO and MASPO jobs end to end on the simulated endpoint at the default budget (600): a strictly better
incumbent deployed on BFCL with 4-agent teams (sequential and centralized) and on the fake dataset, a closed ledger,
and judge / probe calls recorded under their components, never charged."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from core.canonical import verify_seal
from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job
from engine.runner import RetryPolicy
from tests.conftest import start_sim
from tests.optimizers.optjob import bench, read, run
from tests.optimizers.test_jobs import check_closed_ledger

DECODING = {"judge": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 1024},
            "probe": {"temperature": 0.2, "top_p": 0.9, "max_tokens": 768}}


def component_events(db: Path) -> dict[str, list[tuple[str, dict]]]:
    conn = sqlite3.connect(str(db))
    rows = conn.execute("SELECT e.payload, n.parent_id FROM events e JOIN nodes n ON n.node_id = e.node_id"
                        " WHERE e.event_type='model_call'").fetchall()
    conn.close()
    out: dict[str, list[tuple[str, dict]]] = {}
    for payload, parent in rows:
        data = json.loads(payload)
        if "component" in data:
            out.setdefault(data["component"], []).append((parent, data))
    return out


def check_job(out: Path, method: str, shared: bool = False) -> None:
    for name in ("job.json", "optimization.json", "selection.json", "test.json"):
        assert verify_seal(read(out, name)), name
    opt = read(out, "optimization.json")
    check_closed_ledger(opt["budget"], 600)
    assert opt["status"] == "completed"
    assert opt["stop_reason"] in ({"patience", "max_rounds", "rollout_budget_spent"} if method == "mapro"
                                  else {"budget", "maximum_search_depth"})
    selection = read(out, "selection.json")
    assert selection["selected_candidate"] == "incumbent" and selection["fallback_reason"] is None
    assert selection["incumbent_validation_score"] > selection["baseline_validation_score"]
    # charged = the charged rollout records, whatever the judge / probe / reflection traffic
    charged = [r for r in read(out, "optimization/records.jsonl")]
    assert len(charged) == opt["budget"]["charged"] == opt["usage"]["task"]["rollouts"] - sum(
        1 for a in read(out, "optimization/attempts.jsonl") if not a["charged"])
    events = component_events(out / "card.sqlite")
    cell_id = read(out, "job.json")["cell_id"]
    wanted = ("judge", "probe") if method == "mapro" else () if shared else ("judge",)
    if method == "maspo" and shared:  # a shared-prompt team gets global credit only: no judge call at all
        assert opt["usage"]["judge"]["model_calls"] == 0 and "judge" not in events
    for component in wanted:
        usage = opt["usage"][component]
        assert usage["model_calls"] >= 1 and usage["component"] == component
        assert len(events[component]) == usage["model_calls"]
        for parent, payload in events[component]:
            assert parent == f"run/{cell_id}"
            params = payload["params"]
            assert {k: params[k] for k in DECODING[component]} == DECODING[component]
            assert params["chat_template_kwargs"] == {"enable_thinking": False}
            assert payload["purpose"].startswith(f"{method}.")
    if method == "maspo":
        assert opt["usage"]["probe"] == {"model_calls": 0}
    assert opt["usage"]["reflection"]["model_calls"] >= 1
    curve = read(out, "optimization/learning_curve.jsonl")
    assert [r["rollout_grid"] for r in curve] == list(range(0, 601, 10))


def bfcl_config(out: Path, method: str, topology: str) -> JobConfig:
    cfg = build_config(cell=f"task=bfcl,topology={topology},team_size=4", method=method, seed=0, out=str(out),
                       budget=600, task_endpoints=None, model_id=None, data_dir=None, concurrency=32, quiet=True)
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})


@pytest.mark.anyio
@pytest.mark.parametrize("topology", ["sequential", "centralized"])
@pytest.mark.parametrize("method", ["mapro", "maspo"])
async def test_bfcl_four_agent_team_deploys_a_strictly_better_incumbent(tmp_path, method, topology):
    out = tmp_path / "job"
    await run_job(bfcl_config(out, method, topology))
    check_job(out, method)
    roles = read(out, "optimization.json")["incumbent_bundle"]["roles"]
    assert len(roles) == 4


@pytest.mark.parametrize("method", ["mapro", "maspo"])
def test_fake_dataset_shared_prompt_deploys_a_strictly_better_incumbent(tmp_path, method):
    server = start_sim(bench())
    try:
        # a one-role (shared-prompt) team on a second dataset; Single is off the grid for these methods (section 4)
        run(tmp_path / "job", server.base_url, method=method, allow_any_cell=True)
    finally:
        server.stop()
    check_job(tmp_path / "job", method, shared=True)
