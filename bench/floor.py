"""Endpoint-bound floor accounting for bench/optimizer.py: what an engine with zero overhead would need.

Time is counted in request delays: a rollout batch is the longest-processing-time-first (LPT) schedule of its
rollouts' chains of live requests on the `--concurrency` slots (which bound rollouts in flight as well as requests);
a concurrent group of judge / probe calls is the LPT schedule of its thunks' chains of live requests on
min(its limit, capacity) slots; any other live request is one delay. `InFlight` integrates a counter over time.
"""

from __future__ import annotations

import contextvars
import heapq
import time
from typing import Any

# the live-request chain of the group thunk the current task runs in: (chains of its group, thunk index)
THUNK: contextvars.ContextVar[tuple[list[int], int] | None] = contextvars.ContextVar("bench_thunk", default=None)


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
