"""The endpoint's in-flight slots: a free slot is taken without yielding; waiters are served in FIFO order; a
resize wakes waiters; a cancelled waiter never leaks a slot (anyio's CapacityLimiter semantics, minus the yield)."""

from __future__ import annotations

import asyncio

import anyio
import anyio.lowlevel
import pytest

from engine.chat.slots import Slots

pytestmark = pytest.mark.anyio


async def test_free_slot_is_taken_without_yielding_and_counts():
    slots = Slots(2)
    order: list[str] = []

    async def other() -> None:
        order.append("other")

    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        async with slots:  # no checkpoint: the other task has not run yet
            order.append("inside")
            assert slots.borrowed_tokens == 1
    assert order == ["inside", "other"] and slots.borrowed_tokens == 0


async def test_waiters_are_served_in_fifo_order_and_never_exceed_the_total():
    slots, active, peak, served = Slots(3), [0], [0], []

    async def worker(i: int) -> None:
        async with slots:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            served.append(i)
            await anyio.sleep(0.001 * (i % 3))
            active[0] -= 1

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(worker, i)
            await anyio.lowlevel.checkpoint()  # start in order
    assert peak[0] == 3 and served == list(range(20)) and slots.borrowed_tokens == 0


async def test_growing_the_total_wakes_waiters_and_shrinking_holds_new_ones():
    slots = Slots(1)
    entered = anyio.Event()
    release = anyio.Event()

    async def hold() -> None:
        async with slots:
            await release.wait()

    async def second() -> None:
        async with slots:
            entered.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        await anyio.sleep(0.01)
        tg.start_soon(second)
        await anyio.sleep(0.01)
        assert not entered.is_set()
        slots.total_tokens = 2  # the pool re-admits capacity: the waiter runs now
        with anyio.fail_after(1):
            await entered.wait()
        slots.total_tokens = 1
        release.set()
    assert slots.borrowed_tokens == 0


@pytest.mark.parametrize("granted_first", [False, True])
async def test_a_cancelled_waiter_leaks_no_slot(granted_first):
    slots = Slots(1)
    async with slots:
        task = asyncio.ensure_future(slots.__aenter__())
        await asyncio.sleep(0)  # the waiter queues
        if granted_first:
            await slots.__aexit__(None, None, None)  # its slot is granted, then it is cancelled before running
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        if granted_first:
            assert slots.borrowed_tokens == 0
            await slots.__aenter__()  # re-take the outer slot so the block's exit balances
    assert slots.borrowed_tokens == 0
    async with slots:
        assert slots.borrowed_tokens == 1
