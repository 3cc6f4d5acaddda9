"""Routing never changes a result, a seed or a record except the endpoint it names: the same 4-agent debate job
on two simulated endpoints under least-loaded and under cache-aware routing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.cards.bundle import Bundle
from engine.cards.export import export_card
from engine.cards.validate import validate_bundle
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts
from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job
from engine.runner import RetryPolicy
from tests.conftest import start_sim
from tests.engine.jobutil import comparable
from tests.fakebench import FakeBench

VARIES = ("endpoint", "latency_seconds")  # what a model_call record may differ in: where it went, how long it took


def run(out: Path, routing: str) -> dict[str, Any]:
    bench = FakeBench(n_train=12, n_validation=8, n_test=10)
    bench.name = "gpqa"  # type: ignore[misc]  # the gpqa team spec applies; the rows stay the fake sums
    servers = [start_sim(bench), start_sim(bench)]

    async def main() -> dict[str, Any]:
        pool = EndpointPool([Endpoint(s.base_url, "test-model", capacity=3, timeouts=Timeouts(read=10))
                             for s in servers], routing=routing)
        cfg = build_config(cell="task=gpqa,topology=decentralized,team_size=4", method="identity", seed=1,
                           out=str(out), budget=600, task_endpoints=[s.base_url for s in servers],
                           model_id="test-model", data_dir=None, concurrency=6, quiet=True, request_timeout=10.0)
        try:
            result = await run_job(JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)}), bench,
                                   shared_pool=pool)
            return result.to_json()
        finally:
            await pool.aclose()

    try:
        return anyio.run(main)
    finally:
        for s in servers:
            s.stop()


def records(db: Path) -> tuple[dict[str, dict[str, Any]], list[int | None]]:
    """model_call payloads by (node, request key), without the fields routing may change; and the endpoints."""
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT node_id, payload FROM events WHERE event_type = 'model_call'").fetchall()
        scores = conn.execute("SELECT target_id, payload FROM annotations WHERE namespace = 'mpb.score'").fetchall()
    finally:
        conn.close()
    out, endpoints = {}, []
    for node, text in rows:
        payload = json.loads(text)
        endpoints.append(payload["endpoint"])
        out[f"{node} {payload['request_key']}"] = {k: v for k, v in payload.items() if k not in VARIES}
    out.update({f"score {t}": json.loads(p) for t, p in scores})
    return out, endpoints


@pytest.mark.timeout(120)
def test_results_seeds_and_records_are_the_same_under_both_routings(tmp_path):
    least = run(tmp_path / "least", "least-loaded")
    aware = run(tmp_path / "aware", "cache-aware")
    assert comparable(least) == comparable(aware)
    (a, a_endpoints), (b, b_endpoints) = records(tmp_path / "least" / "card.sqlite"), records(
        tmp_path / "aware" / "card.sqlite")
    assert a == b and len(a) > 100  # every call, its request as sent, seed and response, and every score
    assert set(a_endpoints) == set(b_endpoints) == {0, 1}  # each live call names its endpoint
    assert a_endpoints != b_endpoints  # ... which is what routing changed
    bundle = export_card(tmp_path / "aware", tmp_path / "card")
    assert validate_bundle(Bundle.load(tmp_path / "card")) == []
