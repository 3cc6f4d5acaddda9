"""Endpoint-bound floor accounting for bench/optimizer.py: what an engine with zero overhead would need.

Time is counted in request delays: a rollout batch is the longest-processing-time-first (LPT) schedule of its
rollouts' chains of live requests on the `--concurrency` slots (which bound rollouts in flight as well as requests);
a concurrent group of judge / probe calls is the LPT schedule of its thunks' chains of live requests on
min(its limit, capacity) slots; any other live request is one delay. `InFlight` integrates a counter over time.

That floor assumes an endpoint with no service time of its own. `Replay` measures the floor the real endpoint
allows: the request bodies the engine sent, in the same segments (a rollout batch, a group, a single request), the
same chains (one rollout's or one thunk's requests, in order) and the same slots, sent again by a bare aiohttp
client that records nothing and computes nothing, longest chain first; its wall time is that of a client with next
to no overhead against the same endpoint process on the same machine.
"""

from __future__ import annotations

import contextvars
import heapq
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import anyio

# the live-request chain of the group thunk the current task runs in: (chains of its group, thunk index)
THUNK: contextvars.ContextVar[tuple[list[int], int] | None] = contextvars.ContextVar("bench_thunk", default=None)
# the request bodies of the rollout the current task runs (set by the bench's rollout wrapper)
CHAIN: contextvars.ContextVar[list[bytes] | None] = contextvars.ContextVar("bench_chain", default=None)


def lpt_makespan(chains: list[int], slots: int) -> int:
    """Makespan of the chains scheduled longest first, each on the least loaded of `slots` slots (exact for chains
    of equal length; within 4/3 of the optimum otherwise)."""
    loads = [0] * max(1, slots)
    for chain in sorted((c for c in chains if c), reverse=True):
        heapq.heapreplace(loads, loads[0] + chain)
    return max(loads)


class InFlight:
    """Time-integral of a counter: average level and time spent above zero."""

    def __init__(self) -> None:
        self.level, self.last, self.area, self.busy, self.active = 0, time.perf_counter(), 0.0, 0.0, False

    def _advance(self) -> None:
        now = time.perf_counter()
        if self.active:
            dt = now - self.last
            self.area += self.level * dt
            if self.level > 0:
                self.busy += dt
        self.last = now

    def start(self) -> None:
        self.last, self.active, self.area, self.busy = time.perf_counter(), True, 0.0, 0.0

    def stop(self) -> None:
        self._advance()
        self.active = False

    def up(self) -> None:
        self._advance()
        self.level += 1

    def down(self) -> None:
        self._advance()
        self.level -= 1


class Floor:
    """The endpoint-bound floor of the optimize phase, accumulated from the structure of the work."""

    def __init__(self, delay: float, capacity: int):
        self.delay, self.capacity = delay, capacity
        self.seconds, self.batches, self.groups, self.singles = 0.0, 0, 0, 0
        self.in_batch = 0
        self.group_chains: list[int] | None = None

    def batch_started(self) -> None:
        if self.in_batch == 0:
            self.pending: list[int] = []
        self.in_batch += 1

    def batch_done(self, records: list[Any]) -> None:
        """Batches that overlap in time (MASPO's concurrent offspring) count as one wave of their requests."""
        self.in_batch -= 1
        self.pending += [r.usage.n_llm_calls for r in records if not r.replayed and not r.budget_exhausted]
        if self.in_batch == 0 and self.pending:
            self.batches += 1
            self.seconds += self.delay * lpt_makespan(self.pending, self.capacity)

    def group_started(self, n: int) -> list[int] | None:
        """A group opened outside batches and other groups is accounted as a group (else inside its parent)."""
        if self.in_batch or self.group_chains is not None:
            return None
        self.group_chains = [0] * n
        return self.group_chains

    def group_done(self, limit: int) -> None:
        assert self.group_chains is not None
        if any(self.group_chains):
            self.groups += 1
            self.seconds += self.delay * lpt_makespan(self.group_chains, min(limit, self.capacity))
        self.group_chains = None

    def request(self) -> None:
        if self.in_batch:
            return  # part of a rollout batch, or of a judge group overlapping one (counted with the batch)
        if self.group_chains is not None:
            slot = THUNK.get()
            if slot is not None and slot[0] is self.group_chains:
                self.group_chains[slot[1]] += 1
            else:
                self.group_chains.append(1)  # a request of no thunk while the group runs: a chain of its own
            return
        self.singles += 1
        self.seconds += self.delay


@dataclass
class Segment:
    """Work the floor counts as one unit: its chains of request bodies run on at most `slots` at once."""

    kind: str
    slots: int
    chains: list[list[bytes]] = field(default_factory=list)


class Replay:
    """The request bodies of the optimize phase, by segment and chain, to send again (`run`) after the job. A
    request is put where `Floor` counts it: in the open rollout batch (its rollout's chain), else in the open group
    (its thunk's chain), else a single request."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.segments: list[Segment] = []
        self.batch: Segment | None = None
        self.group: Segment | None = None

    @property
    def requests(self) -> int:
        return sum(len(c) for seg in self.segments for c in seg.chains)

    def begin(self, kind: str, slots: int, thunks: int = 0) -> None:
        """Open a batch, or a group of `thunks` (one chain each, as Floor.group_started allocates its counts)."""
        segment = Segment(kind, min(slots, self.capacity), [[] for _ in range(thunks)])
        self.segments.append(segment)
        if kind == "batch":
            self.batch = segment
        else:
            self.group = segment

    def end(self, kind: str) -> None:
        if kind == "batch":
            self.batch = None
        else:
            self.group = None

    def rollout_chain(self) -> list[bytes] | None:
        """A new chain for a rollout starting inside a batch (None outside one)."""
        if self.batch is None:
            return None
        chain: list[bytes] = []
        self.batch.chains.append(chain)
        return chain

    def request(self, data: bytes, in_batch: bool, group: list[int] | None) -> None:
        if in_batch and self.batch is not None:
            chain = CHAIN.get()
            if chain is None:  # a request of no rollout while the batch runs (e.g. a judge): a chain of its own
                self.batch.chains.append([data])
            else:
                chain.append(data)
        elif group is not None and self.group is not None:
            slot = THUNK.get()
            if slot is not None and slot[0] is group:
                self.group.chains[slot[1]].append(data)
            else:
                self.group.chains.append([data])
        else:
            self.segments.append(Segment("single", 1, [[data]]))

    async def run(self, url: str, cpu_per_request: float = 0.0) -> float:
        """Send every segment again, one after the other; the wall time of all of them. With `cpu_per_request`
        (seconds), the client also holds the event loop that long after each response (a busy loop, as an engine's
        own work per call would): the floor of a client with that much CPU per request but no other overhead."""
        connector = aiohttp.TCPConnector(limit=self.capacity + 16, limit_per_host=self.capacity + 16)
        headers = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
            async def chain_of(bodies: list[bytes], limiter: anyio.CapacityLimiter) -> None:
                async with limiter:
                    for data in bodies:
                        async with session.post(url, data=data) as resp:
                            await resp.read()
                        if cpu_per_request:
                            until = time.perf_counter() + cpu_per_request
                            while time.perf_counter() < until:
                                pass

            t0 = time.perf_counter()
            for seg in self.segments:
                chains = sorted((c for c in seg.chains if c), key=len, reverse=True)
                if not chains:
                    continue
                limiter = anyio.CapacityLimiter(max(1, seg.slots))
                async with anyio.create_task_group() as tg:
                    for bodies in chains:
                        tg.start_soon(chain_of, bodies, limiter)
            return time.perf_counter() - t0


def count_jobs_into(floor: Floor) -> None:
    """Count every model call of the jobs of this process into `floor`, in all phases: each `Runner.run_batch` (an
    optimizer's rollouts, a seed or candidate evaluation) is a rollout batch, any other call (reflection,
    proposals) a single request. bench/sweep.py runs each job alone this way to get its own chain floor."""
    from engine.chat.endpoint import Endpoint
    from engine.runner import Runner

    chat, run_batch = Endpoint.chat, Runner.run_batch

    async def counted_chat(self: Endpoint, body: dict[str, Any], encoded: str | None = None) -> Any:
        floor.request()
        return await chat(self, body, encoded)

    async def counted_batch(self: Runner, specs: Any, decoding: dict[str, Any], ledger: Any = None) -> Any:
        floor.batch_started()
        records: list[Any] = []
        try:
            records = await run_batch(self, specs, decoding, ledger)
            return records
        finally:
            floor.batch_done(records)

    Endpoint.chat = counted_chat  # type: ignore[method-assign]
    Runner.run_batch = counted_batch  # type: ignore[method-assign]


def sweep_floor(job_floors: list[float], loads: list[tuple[int, int]], delay: float) -> tuple[float, float, float]:
    """The endpoint-bound floor of jobs run together: no sooner than the longest job's own chain floor (its
    `Floor`, alone on the same slots), nor than any endpoint group's calls on its slots (`loads`: (calls,
    slots) per group: the task endpoints together, the reflection endpoint) at `delay` each. Returns (floor,
    chain bound, throughput bound)."""
    chain = max(job_floors, default=0.0)
    throughput = max((delay * calls / max(1, slots) for calls, slots in loads), default=0.0)
    return max(chain, throughput), chain, throughput
