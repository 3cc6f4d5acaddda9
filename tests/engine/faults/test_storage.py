"""Each response body is stored once: in the store's content-addressed blobs. records.jsonl and the sealed
evaluations reference it by `$blob` instead of carrying it again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio

from core.blobs import BLOB_KEY
from engine.sim.server import SimServer
from engine.store import Store
from tests.conftest import make_policy
from tests.engine.faults.matrix import run_small, small_bench

PAD = 200_000  # > the 64 KiB inline cap


def refs(value: object) -> list[str]:
    if isinstance(value, dict):
        if BLOB_KEY in value:
            return [value[BLOB_KEY]]
        return [r for v in value.values() for r in refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in refs(v)]
    return []


def test_large_responses_are_stored_once_and_referenced(tmp_path: Path):
    server = SimServer(make_policy(small_bench()), pad_bytes=PAD)
    server.start()
    try:
        run_small(tmp_path / "job", server.base_url, "independent", 2)
        answered = [e for e in server.log if e["status"] == 200 and e["row_id"] is not None]
    finally:
        server.stop()
    job = tmp_path / "job"
    conn = sqlite3.connect(str(job / "card.sqlite"))
    blob_sizes = dict(conn.execute("SELECT sha256, bytes FROM blobs").fetchall())
    conn.close()
    big = {digest for digest, size in blob_sizes.items() if size >= PAD}
    # one blob per distinct response body, and nothing else of that size (no second copy anywhere in the store)
    assert len(big) == len({e["key"] for e in answered})
    artifacts = [json.loads(line)["record"] for line in (job / "optimization" / "records.jsonl").read_text().splitlines()]
    artifacts += [r for p in (job / "evaluations").glob("*.json") for r in json.loads(p.read_text())["records"]]
    assert artifacts
    for record in artifacts:
        found = refs(record)
        assert found and all(r.removeprefix("sha256:") in big for r in found)  # a reference, not a copy
    side_bytes = sum(p.stat().st_size for p in job.rglob("*") if p.suffix in (".json", ".jsonl"))
    assert side_bytes < PAD  # all artifacts together are smaller than one response

    async def read_back() -> str:
        async with Store(job / "card.sqlite", run_id="r") as store:
            return str(store.resolve(artifacts[-1])["final_output"]["text"])

    text = anyio.run(read_back)
    assert len(text) > PAD and "Answer:" in text.splitlines()[-1]
