"""Helpers for job-level tests."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job
from engine.runner import RetryPolicy
from engine.sim.faults import request_key as sim_request_key
from tests.fakebench import FakeBench


def config(out: Path, endpoint: str | list[str], *, method: str = "identity", seed: int = 1, concurrency: int = 8,
           timeout: float = 2.0, cell: str = "task=gpqa,topology=single", budget: int = 600,
           max_outage: float = 900.0, reflection: str | None = None, allow_any_cell: bool = True) -> JobConfig:
    """A job on the given endpoint(s); a method that reflects uses `reflection` (default: the first endpoint,
    which the simulated endpoint answers as the reflection model). Test cells may lie off the grid (team sizes 2
    on non-application tasks, ...): `allow_any_cell` runs them, marked non-conformant."""
    endpoints = [endpoint] if isinstance(endpoint, str) else list(endpoint)
    cfg = build_config(cell=cell, method=method, seed=seed, out=str(out), budget=budget,
                       task_endpoints=endpoints, model_id="test-model", data_dir=None, concurrency=concurrency,
                       reflection_endpoint=reflection or endpoints[0], reflection_model="simulated-reflection",
                       quiet=True, request_timeout=timeout, allow_small_budget=budget < 600, max_outage=max_outage,
                       allow_any_cell=allow_any_cell)
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})


def run(out: Path, endpoint: str | list[str], bench: FakeBench | None = None, **kw: Any) -> dict[str, Any]:
    return anyio.run(run_job, config(out, endpoint, **kw), bench or FakeBench(n_train=12, n_validation=20,
                                                                             n_test=30)).to_json()


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """result.json without wall-clock fields."""
    out = json.loads(json.dumps(result))
    out["optimization"].pop("elapsed_seconds", None)
    return out


def stored_sim_keys(db_path: Path) -> set[str]:
    """The simulated endpoint's logical keys of every successful model call recorded in a store."""
    return set(live_sim_keys(db_path))


def live_sim_keys(db_path: Path) -> Counter[str]:
    """How often each simulated-endpoint key was answered live (not replayed) according to a store's model calls."""
    conn = sqlite3.connect(str(db_path))
    keys: Counter[str] = Counter()
    for (payload,) in conn.execute("SELECT payload FROM events WHERE event_type='model_call' AND ok=1"):
        data = json.loads(payload)
        if data.get("replayed_from"):
            continue
        keys[sim_request_key({"model": data["params"]["model"], "messages": data["request"]["messages"],
                              "tools": data["request"].get("tools"), "seed": data["seed"]})] += 1
    conn.close()
    return keys


def answered_sim_keys(log: list[dict[str, Any]]) -> Counter[str]:
    """How often the simulated endpoint answered each request of a job (a 200 without an injected fault; the pool's
    health probes, which match no row and carry no seed, are not the job's requests)."""
    return Counter(e["key"] for e in log if e.get("key") and e.get("status") == 200 and e.get("fault") is None
                   and e.get("kind") != "no_match")
