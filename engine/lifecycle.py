"""Background tasks owned by an `async with` block (structured concurrency without entering task groups by hand).

`running(task, stop)` runs `task` in a task group for as long as the block runs; leaving the block calls
`stop(cancel_scope)` (close a stream, cancel the scope) and waits for the task. The block's own exception
propagates unchanged, not wrapped in an exception group by the task group.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any
from contextlib import asynccontextmanager

import anyio
from anyio import CancelScope


@asynccontextmanager
async def running(task: Callable[[], Coroutine[Any, Any, None]], stop: Callable[[CancelScope], None]) -> AsyncIterator[None]:
    error: BaseException | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(task)
        try:
            yield
        except BaseException as exc:  # re-raised below, outside the task group, exactly as raised
            error = exc
        finally:
            stop(tg.cancel_scope)
    if error is not None:
        raise error


def cancel(scope: CancelScope) -> None:
    scope.cancel()
