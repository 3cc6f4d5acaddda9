"""Members of a team that run at the same time (independent replicas; the peers of one debate round).

`run_members` runs `member(0) ... member(n-1)` concurrently and lets every one of them finish, even after one of
them failed; then it raises the failures, in member order, as one exception group (engine.containment takes the
first as the attempt's failure). A task group alone would cancel the siblings of the first failure in the middle
of their model calls: the endpoint has answered them (or is computing them), but nothing is recorded, so the
runner's same-seed retry of the attempt has to send them again. Letting them finish records their answers, and
the retry replays them from the store: only what failed is sent twice, and which requests are sent does not
depend on which member's answer happened to arrive first.

Cancellation from outside (a deadline, a stopped job) still cancels every member at once: only `Exception`s are
held back, never a `BaseException`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio


async def run_members(n: int, member: Callable[[int], Awaitable[None]]) -> None:
    failures: list[Exception | None] = [None] * n

    async def run(index: int) -> None:
        try:
            await member(index)
        except Exception as exc:  # held until every sibling has finished
            failures[index] = exc

    async with anyio.create_task_group() as tg:
        for index in range(n):
            tg.start_soon(run, index)
    raised = [exc for exc in failures if exc is not None]
    if raised:
        raise ExceptionGroup(f"{len(raised)} of {n} members failed", raised)
