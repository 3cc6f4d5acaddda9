"""Endpoint slots shared by the worker processes of one node: a broker in the parent over a Unix socket.

Why a broker and not a semaphore in shared memory: a POSIX / multiprocessing semaphore is not given back when the
process holding it is killed (kill -9, the OOM killer), so every slot a dead worker held would be lost for the
rest of the sweep; a static 1/N split of each limit (the Ray executor's way) idles the slots of a worker whose
jobs are between phases. The broker counts the slots each connection holds; when a worker dies the kernel closes
its socket and the broker frees them at once. One round trip per model call costs ~0.1 ms of CPU, against several
ms of engine work per call.

Protocol (ASCII lines): `a<i>` acquire a slot of group i; `r<i>` release one; `l<i> <n>` set group i's limit (an
endpoint's outage-aware pool lowers it on 429 backpressure and raises it back, engine/chat/endpoint.py: the last
value any worker sets holds, never above the configured limit). The broker answers an acquire, in FIFO order
across all workers, with `g<i> <in use of every group>` when granted, so each worker's pool routes by the whole
node's load. A group is one `Endpoint` (one in-flight limit): the task endpoints in order, then the reflection
endpoint, as `open_shared` builds them in each process.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from typing import Any


class SlotBroker:
    """The parent's side: per-group limits held across every connected worker."""

    def __init__(self, limits: list[int]):
        self.configured = list(limits)
        self.limits = list(limits)
        self.in_use = [0] * len(limits)
        self.max_in_use = [0] * len(limits)
        self._waiters: list[deque[asyncio.StreamWriter]] = [deque() for _ in limits]
        self._held: dict[asyncio.StreamWriter, Counter[int]] = {}
        self._server: asyncio.base_events.Server | None = None

    async def start(self, path: str) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=path)

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._held):
                writer.close()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held = self._held[writer] = Counter()
        try:
            while line := await reader.readline():
                op, rest = line[:1], line[1:].split()
                i = int(rest[0])
                if op == b"a":
                    self._waiters[i].append(writer)
                elif op == b"r" and held[i] > 0:
                    held[i] -= 1
                    self.in_use[i] -= 1
                elif op == b"l":
                    self.limits[i] = max(1, min(self.configured[i], int(rest[1])))
                self._grant(i)
        except (ConnectionError, ValueError, IndexError):
            pass
        finally:  # the worker closed its socket or died: its slots and its waiting requests are dropped
            del self._held[writer]
            for i, n in held.items():
                self.in_use[i] -= n
            for i, queue in enumerate(self._waiters):
                if writer in queue:
                    self._waiters[i] = deque(w for w in queue if w is not writer)
                self._grant(i)
            writer.close()

    def _grant(self, i: int) -> None:
        queue = self._waiters[i]
        while queue and self.in_use[i] < self.limits[i]:
            writer = queue.popleft()
            if writer.is_closing():
                continue
            self.in_use[i] += 1
            self._held[writer][i] += 1
            self.max_in_use[i] = max(self.max_in_use[i], self.in_use[i])
            writer.write(f"g{i} {','.join(map(str, self.in_use))}\n".encode())


class BrokerClient:
    """A worker's connection to the broker; `slots(i)` is the limiter of group i (replaces `Endpoint.limiter`)."""

    def __init__(self, groups: int):
        self.view = [0] * groups  # every group's slots in use on the node, as the broker last said (+ our own news)
        self._waiters: list[deque[asyncio.Future[None]]] = [deque() for _ in range(groups)]
        self._writer: asyncio.StreamWriter | None = None
        self.lost = asyncio.Event()

    async def connect(self, path: str) -> None:
        reader, self._writer = await asyncio.open_unix_connection(path)
        asyncio.get_running_loop().create_task(self._read(reader))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()

    def send(self, line: str) -> None:
        """Send `line`; a release or limit to a broker that is gone is dropped (it freed everything), an acquire
        raises ConnectionError."""
        if self._writer is None or self._writer.is_closing() or self.lost.is_set():
            if line.startswith("a"):
                raise ConnectionError("the sweep's slot broker is gone")
            return
        self._writer.write(line.encode())

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                head, counts = line.split(b" ", 1)
                i = int(head[1:])
                self.view = [int(c) for c in counts.split(b",")]
                self._granted(i)
        finally:
            self.lost.set()
            for queue in self._waiters:
                for waiter in queue:
                    if not waiter.done():
                        waiter.set_exception(ConnectionError("the sweep's slot broker is gone"))

    def _granted(self, i: int) -> None:
        queue = self._waiters[i]
        while queue:
            waiter = queue.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.send(f"r{i}\n")  # its requester was cancelled meanwhile: give the slot straight back

    async def acquire(self, i: int) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters[i].append(waiter)
        self.send(f"a{i}\n")
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled before it ran: give it back
                self.release(i)
            raise

    def release(self, i: int) -> None:
        self.view[i] = max(0, self.view[i] - 1)
        self.send(f"r{i}\n")

    def slots(self, i: int, total: int) -> "RemoteSlots":
        return RemoteSlots(self, i, total)


class RemoteSlots:
    """`engine.chat.slots.Slots`' interface on the broker: `borrowed_tokens` is the node's load of the endpoint
    (what the pool's least-loaded routing reads), `total_tokens = n` sets its limit for every worker."""

    def __init__(self, client: BrokerClient, index: int, total: int):
        self.client, self.index, self._total = client, index, total

    @property
    def borrowed_tokens(self) -> int:
        return self.client.view[self.index]

    @property
    def total_tokens(self) -> int:
        return self._total

    @total_tokens.setter
    def total_tokens(self, value: int) -> None:
        value = max(1, int(value))
        if value != self._total:
            self._total = value
            self.client.send(f"l{self.index} {value}\n")

    async def __aenter__(self) -> RemoteSlots:
        await self.client.acquire(self.index)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.client.release(self.index)
