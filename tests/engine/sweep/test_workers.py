"""`sweep run --workers 2` against `--workers 1` on the same 12 jobs: identical results (every job's artifacts,
its card's record counts, the sweep summary), and no endpoint ever serving more concurrent requests than its limit
(the endpoints' own count, GET /v1/concurrency, engine/sim/concurrency.py) although the limit is reached."""

from __future__ import annotations

import json
import sqlite3
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.sim.build import build_policy
from engine.sim.server import SimServer
from tests.engine.sweep.sweeputil import MODEL, REFLECTION, SELECTION, plan_keys, sweep

LIMIT = 3
ARTIFACTS = ("result.json", "selection.json", "test.json", "optimization.json")
CARD_TABLES = ("rollouts", "nodes", "edges", "events", "annotations", "blobs")


def servers(delay_s: float = 0.004) -> list[SimServer]:
    """Two task endpoints and a reflection endpoint of its own (so each server sees one in-flight limit)."""
    policy = build_policy(["bfcl"], None)
    return [SimServer(policy, delay_s=delay_s).start() for _ in range(3)]


def endpoint_args(s: list[SimServer]) -> list[str]:
    return ["--task-endpoint", s[0].base_url, "--task-endpoint", s[1].base_url, "--model-id", MODEL,
            "--reflection-endpoint", s[2].base_url, "--reflection-model", REFLECTION, "--limit", str(LIMIT)]


def concurrency(server: SimServer) -> dict[str, Any]:
    with urllib.request.urlopen(f"{server.base_url}/concurrency", timeout=10) as resp:
        return dict(json.loads(resp.read()))


def job_record(run: Path) -> dict[str, Any]:
    """Everything a job decided and measured (its endpoints' URLs and the document hash over them excepted)."""
    out: dict[str, Any] = {name: json.loads((run / name).read_text()) for name in ARTIFACTS}
    out["result.json"]["optimization"].pop("elapsed_seconds", None)
    job = json.loads((run / "job.json").read_text())
    out["job.json"] = {k: v for k, v in job.items() if k not in ("endpoint_reports", "sha256")}
    db = sqlite3.connect(str(run / "card.sqlite"))
    out["card"] = {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in CARD_TABLES}
    db.close()
    return out


def summary(sweep_dir: Path) -> Any:
    text = (sweep_dir / "summary.json").read_text().replace(str(sweep_dir), "SWEEP")
    return json.loads(text)


def run_sweep(sweep_dir: Path, workers: int) -> dict[str, Any]:
    s = servers()
    try:
        proc = sweep("run", "--sweep-dir", str(sweep_dir), *SELECTION, *endpoint_args(s), "--workers", str(workers),
                     "--include-nonconformant")
        seen = [concurrency(x) for x in s]
    finally:
        for x in s:
            x.stop()
    return {"proc": proc, "concurrency": seen}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp("workers")
    return {"root": root, "jobs": plan_keys(*SELECTION), 1: run_sweep(root / "w1", 1), 2: run_sweep(root / "w2", 2)}


def test_two_workers_give_the_results_of_one(both):
    for n in (1, 2):
        assert both[n]["proc"].returncode == 0, both[n]["proc"].stderr[-3000:]
    keys = [j["key"] for j in both["jobs"]]
    assert len(keys) == 12
    for key in keys:
        assert job_record(both["root"] / "w1" / "runs" / key) == job_record(both["root"] / "w2" / "runs" / key), key
    assert summary(both["root"] / "w1") == summary(both["root"] / "w2")
    db = sqlite3.connect(str(both["root"] / "w2" / "sweep.sqlite"))
    assert Counter(r[0] for r in db.execute("SELECT status FROM jobs")) == {"finished": 12}
    assert both[2]["proc"].stdout == both[1]["proc"].stdout  # the aggregate report


def test_no_endpoint_serves_more_than_its_limit_across_workers(both):
    for n in (1, 2):
        seen = both[n]["concurrency"]
        assert all(c["max_in_flight"] <= LIMIT for c in seen), seen
        assert all(c["in_flight"] == 0 for c in seen)
        # the limit is reached on both task endpoints: the check has teeth
        assert [c["max_in_flight"] for c in seen[:2]] == [LIMIT, LIMIT], seen
    assert sum(c["requests"] for c in both[1]["concurrency"]) == sum(c["requests"] for c in both[2]["concurrency"])
