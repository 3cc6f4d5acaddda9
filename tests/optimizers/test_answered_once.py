"""Every optimizer job asks the endpoint for each distinct request once, in the team topologies: a request that
another rollout is sending at that moment (MASPO's parent and offspring on the same item and seed share every
call before the role being searched; MAPRO and GEPA batches can repeat a prompt too) is waited for and
answered from the store, never sent a second time. Over the real simulated HTTP endpoint with its request log, on
BFCL 4-agent teams at the default budget, and on HotpotQA (read by its real loader from the official layout, with
the conformant wiki_dir retrieval tool); the card's live calls are exactly what the endpoint answered."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.vocabulary import SIMULATED_REFLECTION_MODEL_ID, SIMULATED_TASK_MODEL_ID
from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job
from engine.runner import RetryPolicy
from engine.sim.build import build_policy
from engine.sim.faults import FaultPlan
from engine.sim.server import SimServer
from tests.engine.faults.matrix import job_and_log
from tests.engine.jobutil import live_sim_keys
from tests.optimizers.test_jobs import check_closed_ledger
from tests.optimizers.hotpotqa_layout import write_hotpotqa_layout
from tests.optimizers.optjob import read

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

CASES = [("maspo", "centralized", None), ("maspo", "sequential", None), ("maspo", "decentralized", None),
         ("mapro", "decentralized", None), ("gepa", "centralized", None)]
# failed calls and attempts on top: a retried attempt replays what was answered, a waiter whose request failed
# for the rollout that sent it sends its own
FAULTS = FaultPlan(rates={"http_500": 0.05, "reset": 0.03, "malformed_json": 0.03}, seed=3)
CASES += [("maspo", "centralized", FAULTS), ("mapro", "decentralized", FAULTS)]


def config(out: Path, url: str, method: str, topology: str, task: str = "bfcl", data_dir: Path | None = None,
           options: dict[str, Any] | None = None) -> JobConfig:
    cfg = build_config(cell=f"task={task},topology={topology},team_size=4", method=method, seed=2, out=str(out),
                       budget=600, task_endpoints=[url], model_id=SIMULATED_TASK_MODEL_ID,
                       data_dir=None if data_dir is None else str(data_dir), concurrency=32, reflection_endpoint=url,
                       reflection_model=SIMULATED_REFLECTION_MODEL_ID, quiet=True, dataset_options=options or {})
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})


def answered(log: list[dict[str, Any]]) -> Counter[str]:
    """How often the endpoint answered each seeded request (a 200 without an injected fault). Unlike
    tests/engine/jobutil.answered_sim_keys this keeps the answers that match no dataset row (MAPRO's tool-less probe of a manager prompt):
    the pool's health probes, which carry no seed, are the only requests left out."""
    return Counter(e["key"] for e in log if e.get("key") and e.get("status") == 200 and e.get("fault") is None
                   and e.get("seed") is not None)


@pytest.mark.parametrize("method,topology,faults", CASES)
def test_each_distinct_request_is_answered_once(tmp_path: Path, method: str, topology: str, faults: FaultPlan | None):
    server = SimServer(build_policy(["bfcl"]), faults=faults).start()
    out = tmp_path / "job"
    _, log = job_and_log(server, lambda: anyio.run(run_job, config(out, server.base_url, method, topology)))
    check_answered_once(out, log, faults)


@pytest.mark.parametrize("method", ["maspo", "mapro"])
def test_each_distinct_hotpotqa_request_is_answered_once(tmp_path: Path, method: str):
    """Sequential HotpotQA team with its retrieval tool: tool calls and model calls are shared the same way."""
    data_dir, wiki_dir = write_hotpotqa_layout(tmp_path / "hotpotqa")
    server = SimServer(build_policy(["hotpotqa"], str(data_dir))).start()
    out = tmp_path / "job"
    cfg = config(out, server.base_url, method, "sequential", "hotpotqa", data_dir, {"wiki_dir": str(wiki_dir)})
    _, log = job_and_log(server, lambda: anyio.run(run_job, cfg))
    check_answered_once(out, log, None)


def check_answered_once(out: Path, log: list[dict[str, Any]], faults: FaultPlan | None) -> None:
    check_closed_ledger(read(out, "optimization.json")["budget"], 600)
    if faults is not None:
        assert sum(1 for e in log if e.get("fault")) >= 50
    counts = answered(log)
    assert len(counts) > 500  # the job's own requests: rollouts, judge / probe, reflection, evaluations
    assert max(counts.values()) == 1, [k for k, c in counts.items() if c > 1][:3]
    assert live_sim_keys(out / "card.sqlite") == counts
