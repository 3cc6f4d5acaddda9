"""The model_call payload as stored: the canonical JSON of the request as sent (messages, tools, sampling params and
the derived seed) and its response, and a request over the inline cap goes to content-addressed blobs, not inline."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from core.blobs import BLOB_KEY
from core.canonical import canonical_json, sha256_hex
from engine.call_sites import AgentTurn
from engine.chat.endpoint import Endpoint
from engine.recorder import Recorder
from engine.store import Store
from tests.conftest import start_sim
from tests.fakebench import FakeBench

pytestmark = pytest.mark.anyio
ROLLOUT = "optimize/r1/abc"
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look ünïcode \"up\"\n",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]


def _payloads(db: Path) -> list[str]:
    conn = sqlite3.connect(str(db))
    try:
        return [p for (p,) in conn.execute("SELECT payload FROM events ORDER BY rowid")]
    finally:
        conn.close()


@pytest.mark.parametrize("size", [10, 70_000])  # inline, and a request over the 64 KB inline cap
async def test_the_stored_payload_is_canonical_and_big_requests_go_to_blobs(tmp_path: Path, size: int):
    server = start_sim(FakeBench())
    db = tmp_path / "card.sqlite"
    endpoint = Endpoint(server.base_url, "test-model")
    body = {"messages": [{"role": "system", "content": "é" + "x" * size}, {"role": "user", "content": "2 + 2?"}],
            "tools": TOOLS, "temperature": 0.0, "max_tokens": 32}
    try:
        async with Store(db, run_id="run") as store:
            await store.add_node(node_id=ROLLOUT, parent_id=None, instance_key="r1", task_key="optimize",
                                 status="running", worker_key=None, level=1, actor="test")
            recorder = Recorder(store=store, endpoint=endpoint, execution_id=f"{ROLLOUT}#g0a1")
            await recorder.call(AgentTurn(ROLLOUT, 7, "solver", 1, 0), body)
    finally:
        await endpoint.aclose()
        server.stop()
    [text] = _payloads(db)
    payload = json.loads(text)
    assert canonical_json(payload) == text
    seed = server.log[0]["seed"]
    if size < 1000:
        assert payload["request"] == {"messages": body["messages"], "tools": TOOLS}
        assert payload["params"] == {"max_tokens": 32, "model": "test-model", "seed": seed, "temperature": 0.0}
        assert payload["seed"] == seed and payload["request_key"]
    else:
        assert len(text) < 65_536 and BLOB_KEY in text  # the messages went to a blob
        conn = sqlite3.connect(str(db))
        try:
            [(content,)] = conn.execute("SELECT content FROM blobs").fetchall()
        finally:
            conn.close()
        assert json.loads(content) == body["messages"][0]["content"]  # the exact bytes of the long string
        ref = payload["request"]["messages"][0]["content"]
        assert ref[BLOB_KEY] == f"sha256:{sha256_hex(content)}" and payload["request"]["tools"] == TOOLS
