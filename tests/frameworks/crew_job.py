"""Jobs of the CrewAI / Agents SDK runtime tests on the simulated endpoint, and what they read back from the card.

As a module it runs one job in a subprocess (the kill -9 tests) with a network guard: an audit hook that notes every
connection or name lookup that is not loopback and prints them to stderr as `NONLOCAL <address>` lines at exit.

usage: python -m tests.frameworks.crew_job OUT ENDPOINT CELL METHOD BUDGET
"""

from __future__ import annotations

import atexit
import json
import socket
import sqlite3
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from core.benchmark import Benchmark
from core.protocol import EVALUATION_DECODING, OPTIMIZATION_DECODING, REPETITION_PENALTY
from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job, summary_line
from engine.runner import RetryPolicy
from tests.frameworks.crew_bench import ToolSums

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def config(out: Path, endpoint: str, cell: str, method: str, budget: int, timeout: float = 10.0,
           concurrency: int = 4, model_id: str = "test-model", phase: str = "all") -> JobConfig:
    cfg = build_config(cell=cell, method=method, seed=1, out=str(out), budget=budget, task_endpoints=[endpoint],
                       model_id=model_id, data_dir=None, concurrency=concurrency, reflection_endpoint=endpoint,
                       reflection_model="simulated-reflection", quiet=True, request_timeout=timeout,
                       allow_small_budget=budget < 600, allow_any_cell=True, phase=phase)
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})


def run(out: Path, endpoint: str, cell: str, method: str = "identity", budget: int = 600,
        bench: Benchmark | None = None, **kw: Any) -> dict[str, Any]:
    """A job on `bench` (default: ToolSums; None for a registered dataset, e.g. BFCL, pass bench=REGISTERED)."""
    return job(out, endpoint, cell, method, budget, bench, **kw).to_json()


def job(out: Path, endpoint: str, cell: str, method: str = "identity", budget: int = 600,
        bench: Benchmark | None = None, **kw: Any) -> Any:
    """`run`, returning run_job's typed result."""
    chosen = None if bench is REGISTERED else (bench or ToolSums())
    return anyio.run(run_job, config(out, endpoint, cell, method, budget, **kw), chosen)


REGISTERED: Any = object()  # run(..., bench=REGISTERED): the cell's task from the benchmark registry


@dataclass(frozen=True)
class Call:
    node_id: str
    rollout: str
    phase: str
    role: str
    member: int
    turn: int
    seed: int
    rollout_seed: int
    params: dict[str, Any]
    framework: str | None
    framework_params: dict[str, str]
    replay_mismatch: Any


def calls(job: Path) -> list[Call]:
    """Every model call of the card's rollouts, with its rollout's seed and phase."""
    conn = sqlite3.connect(str(job / "card.sqlite"))
    try:
        rollouts = {node: (json.loads(record)["request_seed"], phase)
                    for node, record, phase in conn.execute("SELECT node_id, record, phase FROM rollouts")}
        rows = conn.execute("SELECT e.node_id, n.parent_id, e.payload FROM events e JOIN nodes n ON "
                            "n.node_id = e.node_id WHERE e.event_type = 'model_call'").fetchall()
    finally:
        conn.close()
    out = []
    for node_id, parent, payload in rows:
        if parent not in rollouts:
            continue  # reflection / component calls hang under the run node
        data = json.loads(payload)
        seed, phase = rollouts[parent]
        out.append(Call(node_id=node_id, rollout=parent, phase=phase, role=data["role"], member=data["member"],
                        turn=data["turn"], seed=data["seed"], rollout_seed=seed, params=data["params"],
                        framework=data.get("framework"), framework_params=data.get("framework_params", {}),
                        replay_mismatch=data.get("replay_mismatch")))
    return out


def protocol_params(phase: str, framework: str = "") -> dict[str, Any]:
    """The decoding the protocol sends in a phase (what every recorded call must carry); the Agents SDK's requests
    go without repetition_penalty (protocol section 2.5)."""
    decoding = (OPTIMIZATION_DECODING if phase == "optimize" else EVALUATION_DECODING).protocol_json()
    return {"temperature": decoding["temperature"], "top_p": decoding["top_p"],
            "max_tokens": decoding["max_tokens"],
            "repetition_penalty": None if framework == "openai_agents" else REPETITION_PENALTY,
            "chat_template_kwargs": {"enable_thinking": False}}


def reads(job: Path) -> dict[str, set[str]]:
    """target call node -> the call nodes it read (the card's edges)."""
    conn = sqlite3.connect(str(job / "card.sqlite"))
    try:
        edges = conn.execute("SELECT source_node_id, target_node_id FROM edges").fetchall()
    finally:
        conn.close()
    out: dict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        out[target].add(source)
    return out


class NetworkGuard:
    """Notes every socket connection / name lookup that is not loopback (sys.addaudithook)."""

    def __init__(self) -> None:
        self.nonlocal_: list[str] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "socket.connect":
            sock, address = args[0], args[1]
            if getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6) and address[0] not in LOOPBACK:
                self.nonlocal_.append(f"connect {address!r}")
        elif event == "socket.getaddrinfo" and args[0] not in LOOPBACK and args[0] is not None:
            self.nonlocal_.append(f"getaddrinfo {args[0]!r}")

    def report(self) -> None:
        for line in self.nonlocal_:
            print(f"NONLOCAL {line}", file=sys.stderr, flush=True)


def main() -> None:
    guard = NetworkGuard()
    sys.addaudithook(guard)
    atexit.register(guard.report)
    out, endpoint, cell, method, budget = sys.argv[1:6]
    result = job(Path(out), endpoint, cell, method, int(budget))
    print(json.dumps(summary_line(result), sort_keys=True))


if __name__ == "__main__":
    main()


def assert_seeds_and_decoding(job: Path, framework: str, asked: dict[str, str]) -> list[Call]:
    """Every model call of the job's rollouts came through `framework`'s gateway route with its logical seed and the
    protocol's decoding of its phase; what the framework asked for (`asked`, canonical JSON values) is kept in
    `framework_params` only. Returns the calls."""
    from core.seeds import call_seed

    recorded = calls(job)
    assert recorded, "no model call recorded"
    for call in recorded:
        assert call.framework == framework, call
        assert call.seed == call_seed(call.rollout_seed, call.role, call.member, call.turn), call
        assert call.params["seed"] == call.seed
        expected = protocol_params(call.phase, framework)
        assert {k: call.params.get(k) for k in expected} == expected, call
        assert {k: call.framework_params.get(k) for k in asked} == asked, call.framework_params
        assert call.replay_mismatch is None
    return recorded


def by_attempt(recorded: list[Call]) -> dict[str, list[Call]]:
    """The calls of each rollout attempt (the node id's execution part), ordered by (member, turn)."""
    out: dict[str, list[Call]] = defaultdict(list)
    for call in recorded:
        out[call.node_id.rsplit("/", 2)[0]].append(call)
    return {attempt: sorted(group, key=lambda c: (c.member, c.turn)) for attempt, group in out.items()}


def replayed_turns(job: Path, framework: str) -> int:
    """Model calls of `framework`'s gateway turns answered from the store (a resumed rollout's recorded turns)."""
    conn = sqlite3.connect(str(job / "card.sqlite"))
    try:
        count: int = conn.execute("SELECT count(*) FROM events WHERE event_type='model_call' AND "
                                  "json_extract(payload, '$.replayed_from') IS NOT NULL AND "
                                  "json_extract(payload, '$.framework') = ?", (framework,)).fetchone()[0]
    finally:
        conn.close()
    return count
