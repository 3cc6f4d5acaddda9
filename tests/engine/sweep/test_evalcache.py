"""The shared-evaluation cache keeps the answers of an evaluation that ended with an infrastructure failure, so
the next job that needs it sends only what is missing; only a complete evaluation is shared as such."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio

from core.canonical import content_hash
from core.errors import InfrastructureError
from engine.sweep.evalcache import EvaluationCache

IDENTITY = {"evaluation_id": "e1", "split": "test"}
BODIES = [{"messages": [{"role": "user", "content": f"q{i}"}], "seed": i} for i in range(5)]


class Pool:
    """A live pool that answers every request except the ones named in `down` (those fail as infrastructure)."""

    endpoints: list[Any] = []
    model_id = "m"
    capacity = 4

    def __init__(self, down: set[int] = frozenset()):  # type: ignore[assignment]
        self.down, self.sent = down, []

    async def chat(self, body: dict[str, Any], encoded: str | None = None) -> tuple[dict[str, Any], float]:
        self.sent.append(body["seed"])
        if body["seed"] in self.down:
            raise InfrastructureError("HTTP 500")
        return {"answer": body["seed"]}, 0.01


async def rollouts(pool: Any) -> list[Any]:
    """One rollout per body; a rollout whose call failed is not usable."""
    records = []
    for body in BODIES:
        try:
            response, _ = await pool.chat(body)
            records.append(SimpleNamespace(usable=True, answer=response["answer"]))
        except InfrastructureError:
            records.append(SimpleNamespace(usable=False, answer=None))
    return records


def evaluate(cache: EvaluationCache, pool: Pool) -> tuple[list[Any], dict[str, Any]]:
    return anyio.run(cache.evaluate, "e1", IDENTITY, pool, rollouts)


def test_a_failed_rollout_keeps_its_neighbours_answers_and_the_next_job_sends_only_what_failed(tmp_path: Path):
    cache = EvaluationCache(tmp_path / "shared")
    first = Pool(down={3})
    records, prov = evaluate(cache.for_job("a"), first)
    assert [r.usable for r in records] == [True, True, True, False, True]
    assert prov == {"source": "computed", "computed_by": "a", "calls_from_cache": 0, "calls_live": 5,
                    "saved": True, "complete": False}
    saved = json.loads((tmp_path / "shared" / "e1.json").read_text())
    assert saved["complete"] is False and len(saved["responses"]) == 4

    second = Pool()
    records, prov = evaluate(cache.for_job("b"), second)
    assert second.sent == [3]  # only the failed request goes to the endpoint again
    assert [r.answer for r in records] == [0, 1, 2, 3, 4]
    assert prov == {"source": "extended", "computed_by": "a", "calls_from_cache": 4, "calls_live": 1,
                    "saved": True, "complete": True}
    saved = json.loads((tmp_path / "shared" / "e1.json").read_text())
    assert saved["complete"] is True and set(saved["responses"]) == {content_hash(b) for b in BODIES}

    third = Pool(down={0, 1, 2, 3, 4})  # the endpoint is down: a complete evaluation needs no request
    records, prov = evaluate(cache.for_job("c"), third)
    assert third.sent == [] and all(r.usable for r in records)
    assert prov["source"] == "shared" and prov["calls_live"] == 0 and prov["saved"] is False


def test_a_job_that_fails_again_still_adds_what_it_got(tmp_path: Path):
    cache = EvaluationCache(tmp_path / "shared")
    evaluate(cache.for_job("a"), Pool(down={1, 3}))
    again = Pool(down={3})
    _, prov = evaluate(cache.for_job("b"), again)
    assert again.sent == [1, 3] and prov["source"] == "extended" and prov["complete"] is False
    last = Pool()
    _, prov = evaluate(cache.for_job("c"), last)
    assert last.sent == [3] and prov["complete"] is True


def test_a_file_written_before_the_complete_flag_is_a_complete_evaluation(tmp_path: Path):
    cache = EvaluationCache(tmp_path / "shared")
    evaluate(cache.for_job("a"), Pool())
    path = tmp_path / "shared" / "e1.json"
    data = json.loads(path.read_text())
    del data["complete"]
    path.write_text(json.dumps(data))
    pool = Pool()
    _, prov = evaluate(cache.for_job("b"), pool)
    assert pool.sent == [] and prov["source"] == "shared"
