"""run_members: a failing member never cancels its siblings; failures come back in member order; a cancellation from
outside still stops everyone."""

from __future__ import annotations

import anyio
import pytest

from topologies.members import run_members


def test_a_failing_member_lets_its_siblings_finish():
    finished: list[int] = []

    async def main() -> None:
        failed = anyio.Event()

        async def member(i: int) -> None:
            if i == 0:
                failed.set()
                raise ValueError("member 0")
            await failed.wait()  # still running after member 0 has failed
            await anyio.sleep(0)
            finished.append(i)

        await run_members(3, member)

    with pytest.raises(ExceptionGroup) as info:
        anyio.run(main)
    assert sorted(finished) == [1, 2]
    assert [str(e) for e in info.value.exceptions] == ["member 0"]


def test_failures_come_back_in_member_order_whatever_order_they_happened_in():
    async def main() -> None:
        second_failed = anyio.Event()

        async def member(i: int) -> None:
            if i == 2:
                second_failed.set()
                raise KeyError("two")
            if i == 0:
                await second_failed.wait()
                raise RuntimeError("zero")

        await run_members(3, member)

    with pytest.raises(ExceptionGroup) as info:
        anyio.run(main)
    assert [type(e) for e in info.value.exceptions] == [RuntimeError, KeyError]


def test_no_failure_returns_normally_with_every_member_run():
    ran: list[int] = []

    async def member(i: int) -> None:
        ran.append(i)

    anyio.run(run_members, 4, member)
    assert sorted(ran) == [0, 1, 2, 3]


def test_cancellation_from_outside_stops_every_member():
    stopped: list[int] = []

    async def main() -> None:
        started = anyio.Event()

        async def member(i: int) -> None:
            try:
                started.set()
                await anyio.sleep_forever()
            finally:
                stopped.append(i)

        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_members, 2, member)
                await started.wait()
                scope.cancel()

    anyio.run(main)  # no exception group: a cancellation is not a member's failure
    assert sorted(stopped) == [0, 1]
