"""Run one batch of rollouts of a topology (native or a framework runtime) through the real Runner, Store, endpoint
pool and, for framework runtimes, the recording gateway; read back the card's agent-turn nodes, edges and request
seeds. Used to compare LangGraph with native on the same rollouts (same rollout seeds, same rows)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from benchmarks.registry import get_benchmark
from core.benchmark import Benchmark
from core.models import Row, RolloutRecord
from core.simulation import SimReply
from core.protocol import OPTIMIZATION_DECODING
from core.topology import Topology
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts
from engine.gateway.server import Gateway
from engine.runner import RetryPolicy, RolloutSpec, Runner
from engine.runtimes import needs_gateway
from engine.sim.policy import Decision, Match, Policy
from engine.sim.request_text import offered_tool_names
from engine.store import Store
from topologies.prompts import seed_bundle

CALCULATION = {"name": "calculator", "arguments": {"expression": "(7 + 5) * 3"}}


def tool_calling_math() -> Benchmark:
    """The real MATH benchmark (loader, scorer, calculator tool), whose simulated answering agent first calls the
    calculator whenever it is offered tools (the simulated endpoint then replies "Done." to the tool result): the
    path on which an agent's tools run."""
    bench = get_benchmark("math")

    class ToolCallingMath(type(bench)):  # type: ignore[misc]
        def simulate(self, row: Row, mode: str | None, rng: Any) -> SimReply:
            reply: SimReply = super().simulate(row, mode, rng)
            return SimReply(content=reply.content, tool_calls=(CALCULATION,))

    calling: Benchmark = ToolCallingMath.__new__(ToolCallingMath)
    calling.__dict__.update(bench.__dict__)
    return calling


DECODING = OPTIMIZATION_DECODING
MODEL = "simulated-policy"


def specs(bench: Benchmark, rows: list[Any], topology: Topology, team_size: int) -> list[RolloutSpec]:
    bundle = seed_bundle(topology.name, bench.name, topology.roles(bench.name, team_size))
    return [RolloutSpec(row=r, bundle=bundle, seed=700 + i, phase="optimize", rollout_key=f"cmp:{r.id}",
                        position=i) for i, r in enumerate(rows)]


def execute(url: str, db: Path, topology: Topology, bench: Benchmark, batch: list[RolloutSpec],
            concurrency: int = 4) -> list[RolloutRecord]:
    async def main() -> list[RolloutRecord]:
        async with AsyncExitStack() as stack:
            pool = EndpointPool([Endpoint(url, MODEL, capacity=concurrency, timeouts=Timeouts(read=30))])
            stack.push_async_callback(pool.aclose)
            store = await stack.enter_async_context(Store(db, run_id="r"))
            gateway = await stack.enter_async_context(Gateway()) if needs_gateway(topology) else None
            await store.add_node(node_id="run", parent_id=None, instance_key="r", task_key="job", status="running",
                                 worker_key=None, level=0, actor="t")
            runner = Runner(store=store, pool=pool, bench=bench, topology=topology, run_node="run",
                            retry=RetryPolicy(base_delay=0.0), concurrency=concurrency, gateway=gateway)
            return await runner.run_batch(batch, DECODING)

    return anyio.run(main)


def _role(short: str) -> str:
    """'caller.2/t1' -> 'caller'."""
    return short.split("/")[0].rsplit(".", 1)[0]


def agent_graph(db: Path) -> dict[str, tuple[set[str], set[tuple[str, str]]]]:
    """Per rollout node: its agent-turn nodes ('role.member/tturn') and the edges between them."""
    conn = sqlite3.connect(str(db))
    try:
        nodes = conn.execute("SELECT node_id, parent_id FROM nodes WHERE level=2").fetchall()
        edges = conn.execute("SELECT source_node_id, target_node_id FROM edges").fetchall()
    finally:
        conn.close()
    short = {node: "/".join(node.split("/")[-2:]) for node, _ in nodes}
    parent = dict(nodes)
    out: dict[str, tuple[set[str], set[tuple[str, str]]]] = {}
    for node, rollout in nodes:
        out.setdefault(rollout, (set(), set()))[0].add(short[node])
    for s, t in edges:
        if s in short and t in short:
            out.setdefault(parent[t], (set(), set()))[1].add((short[s], short[t]))
    return out


def role_edges(db: Path) -> set[tuple[str, str]]:
    """Who reads whom, by role, over the whole batch."""
    return {(_role(s), _role(t)) for _, edges in agent_graph(db).values() for s, t in edges}


def model_calls(db: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT node_id, payload FROM events WHERE event_type='model_call' AND ok=1 "
                            "ORDER BY event_id").fetchall()
    finally:
        conn.close()
    return [{**json.loads(p), "node_id": n} for n, p in rows]


def seeds_per_rollout(db: Path) -> dict[str, Counter[tuple[str, int, int, int]]]:
    """rollout node -> multiset of (role, member, turn, request seed) of its recorded model calls."""
    out: dict[str, Counter[tuple[str, int, int, int]]] = {}
    for call in model_calls(db):
        rollout = call["node_id"].rsplit("/", 2)[0]
        out.setdefault(rollout, Counter())[(call["role"], call["member"], call["turn"], call["seed"])] += 1
    return out


def _normalized(request: dict[str, Any]) -> dict[str, Any]:
    """A request with tool-call arguments parsed and tool-call ids numbered in order of appearance. LangChain
    re-serializes an earlier reply's arguments with other JSON spacing (the arguments are the same); the simulated
    endpoint derives a call's id from the request's bytes, so the ids of later replies differ with it."""
    out = json.loads(json.dumps(request))
    ids: dict[str, str] = {}
    for message in out.get("messages", []):
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            if isinstance(function.get("arguments"), str):
                function["arguments"] = json.loads(function["arguments"])
            call["id"] = ids.setdefault(str(call.get("id")), f"call#{len(ids)}")
        if message.get("role") == "tool":
            message["tool_call_id"] = ids.get(str(message.get("tool_call_id")), message.get("tool_call_id"))
    return out


def requests_by_turn(db: Path) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    """(rollout, role, member, turn) -> the request as sent (messages and tools, arguments parsed)."""
    return {(c["node_id"].rsplit("/", 2)[0], c["role"], c["member"], c["turn"]): _normalized(c["request"])
            for c in model_calls(db)}


def rollout_seeds(db: Path) -> dict[str, int]:
    """rollout node -> its request seed (the rollout seed the card records)."""
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT node_id, record FROM rollouts").fetchall()
    finally:
        conn.close()
    return {node: int(json.loads(record)["request_seed"]) for node, record in rows}


def tool_events(db: Path) -> dict[str, Counter[str]]:
    """rollout node -> multiset of its tool events (type, agent turn, tool, args or result; the call id is left
    out: the simulated endpoint derives it from the request's bytes, see `_normalized`)."""
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT node_id, event_type, payload FROM events WHERE event_type IN "
                            "('tool_call', 'tool_result')").fetchall()
    finally:
        conn.close()
    out: dict[str, Counter[str]] = {}
    for node, kind, payload in rows:
        rollout, agent_turn = node.rsplit("/", 2)[0], "/".join(node.split("/")[-2:])
        data = json.loads(payload)
        body = {k: data.get(k) for k in ("tool_name", "args", "content", "is_error")}
        out.setdefault(rollout, Counter())[json.dumps([kind, agent_turn, body], sort_keys=True)] += 1
    return out


class ToolLoopPolicy(Policy):
    """The simulated endpoint, except that any agent offered dataset tools calls the calculator, every time: each
    tool loop runs to its step limit. A manager offered delegate tools still delegates once (to `delegate`, a
    worker with tools, when given), then answers; with `endless_manager` it delegates on every turn instead
    (the turn cap ends the rollout)."""

    def __init__(self, *args: Any, delegate: str | None = None, endless_manager: bool = False, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.delegate, self.endless_manager = delegate, endless_manager

    def decide(self, body: Any, match: Match | None | bool = False) -> Decision:
        names = offered_tool_names(body)
        if self.endless_manager and names and names[0].startswith("delegate_to_"):
            call = {"name": names[0], "arguments": {"task": "Keep going."}}
            return Decision("delegate", SimReply(content="Delegating again.", tool_calls=(call,)))
        if any(n.startswith("delegate_to_") for n in names):
            first = [t for t in body["tools"] if t["function"]["name"] == f"delegate_to_{self.delegate}"]
            return super().decide({**body, "tools": first + [t for t in body["tools"] if t not in first]}, match)
        if names and body.get("tool_choice") != "none":
            return Decision("answer", SimReply(content="Checking with the calculator.", tool_calls=(CALCULATION,)))
        return super().decide(body, match)
