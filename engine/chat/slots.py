"""An endpoint's in-flight slots: a counting limiter whose size the outage-aware pool changes at run time.

It replaces anyio's CapacityLimiter on the per-request path because that one always yields to the event loop once
when a slot is free (anyio's checkpoint rule): under load every model call then waits a whole loop iteration for a
slot it already has. Here a free slot is taken without yielding; a request that has to wait is woken in FIFO order
as slots free up or the size grows. A waiter cancelled after being granted gives its slot back.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Slots:
    def __init__(self, total: int):
        if total < 1:
            raise ValueError("an endpoint needs at least one slot")
        self._total = total
        self.borrowed_tokens = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def total_tokens(self) -> int:
        return self._total

    @total_tokens.setter
    def total_tokens(self, value: int) -> None:
        self._total = max(1, int(value))
        self._grant()

    async def __aenter__(self) -> Slots:
        if self.borrowed_tokens < self._total and not self._waiters:
            self.borrowed_tokens += 1
            return self
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled before it ran: give it back
                self.borrowed_tokens -= 1
                self._grant()
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.borrowed_tokens -= 1
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self.borrowed_tokens < self._total:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.borrowed_tokens += 1
                waiter.set_result(None)
