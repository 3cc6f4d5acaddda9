"""Reading an AutoGen job's artifacts: every rollout record (seed, phase) and every recorded model call."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from core.protocol import EVALUATION_DECODING, OPTIMIZATION_DECODING


def records(job: Path) -> list[dict[str, Any]]:
    """Every rollout record the job wrote: evaluations (validation, test) and the optimizer's rollouts."""
    found: list[dict[str, Any]] = []
    for path in sorted((job / "evaluations").glob("*.json")):
        found += json.loads(path.read_text())["records"]
    optimized = job / "optimization" / "records.jsonl"
    if optimized.exists():
        found += [json.loads(line)["record"] for line in optimized.read_text().splitlines() if line]
    return found


def model_calls(db: Path) -> list[tuple[str, dict[str, Any]]]:
    """(agent-turn node id, model_call payload) for every recorded model call, in recording order."""
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT node_id, payload FROM events WHERE event_type='model_call' "
                            "ORDER BY event_id").fetchall()
    finally:
        conn.close()
    return [(node, json.loads(payload)) for node, payload in rows]


def rollout_of(node_id: str) -> str:
    """The rollout id of an agent-turn node ('<phase>/<row>/<eval or key>#<attempt>/<role.member>/t<turn>')."""
    return node_id.split("#")[0]


def decoding_for(phase: str) -> dict[str, Any]:
    return (OPTIMIZATION_DECODING if phase == "optimize" else EVALUATION_DECODING).protocol_json()
