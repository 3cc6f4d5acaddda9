"""The request log, in memory and as JSON lines."""

from __future__ import annotations

import pytest

from pathlib import Path

import httpx

from engine.sim.faults import FaultPlan, ScheduledFault, request_key
from engine.sim.policy import Policy
from engine.sim.requestlog import read_log_file
from engine.sim.server import SimServer
from tests.engine.sim.fake_benchmark import answering_messages


@pytest.mark.anyio
async def test_log_records_every_request_in_arrival_order(policy: Policy, tmp_path: Path) -> None:
    log_path = tmp_path / "sub" / "requests.jsonl"
    answer = {"model": "qwen", "seed": 4, "messages": answering_messages("r4")}
    planner = {"model": "qwen", "seed": 5,
               "messages": [{"role": "system", "content": "You plan."}, {"role": "user", "content": "Compute 2 + 3."}]}
    reflection = {"model": "simulated-reflection",
                  "messages": [{"role": "user", "content": "<current_instruction>Go.</current_instruction>"}]}
    unmatched = {"model": "qwen", "messages": [{"role": "user", "content": "hi"}]}
    plan = FaultPlan(schedule=[ScheduledFault("http_500", key=request_key(answer), occurrence=0)])

    async def go() -> list[int]:
        async with httpx.AsyncClient(base_url=srv.base_url) as client:
            return [(await client.post("/chat/completions", json=b)).status_code
                    for b in (answer, answer, planner, reflection, unmatched)]

    with SimServer(policy, faults=plan, log_path=str(log_path)) as srv:
        assert await go() == [500, 200, 200, 200, 200]
        log = srv.log
        assert read_log_file(log_path) == log  # readable while the server runs
        assert srv.status_counts()[200] == 4 and srv.fault_counts() == {"http_500": 1}
        assert [e["index"] for e in srv.entries_for_row("r4")] == [0, 1]

    expected_mode = policy.expected_mode(policy.lookup(answer["messages"]).row, answer["messages"][0]["content"], 4)
    assert log == [
        {"index": 0, "key": request_key(answer), "row_id": "r4", "seed": 4, "model": "qwen", "status": 500,
         "fault": "http_500", "occurrence": 0, "kind": None, "mode": None},
        {"index": 1, "key": request_key(answer), "row_id": "r4", "seed": 4, "model": "qwen", "status": 200,
         "fault": None, "occurrence": 1, "kind": "answer", "mode": expected_mode},
        {"index": 2, "key": request_key(planner), "row_id": "r1", "seed": 5, "model": "qwen", "status": 200,
         "fault": None, "occurrence": 0, "kind": "analysis", "mode": None},
        {"index": 3, "key": request_key(reflection), "row_id": None, "seed": None, "model": "simulated-reflection",
         "status": 200, "fault": None, "occurrence": 0, "kind": "reflection", "mode": None},
        {"index": 4, "key": request_key(unmatched), "row_id": None, "seed": None, "model": "qwen", "status": 200,
         "fault": None, "occurrence": 0, "kind": "no_match", "mode": None},
    ]


def test_log_is_a_copy(server: SimServer) -> None:
    snapshot = server.log
    snapshot.append({"index": 99})
    assert server.log == []


@pytest.mark.anyio
async def test_log_file_appends_across_servers(policy: Policy, tmp_path: Path) -> None:
    log_path = tmp_path / "requests.jsonl"
    body = {"model": "qwen", "seed": 1, "messages": answering_messages("r1")}
    for _ in range(2):
        with SimServer(policy, log_path=str(log_path)) as srv:
            async def go() -> None:
                async with httpx.AsyncClient(base_url=srv.base_url) as client:
                    await client.post("/chat/completions", json=body)
            await go()
    assert [e["index"] for e in read_log_file(log_path)] == [0, 0]
