"""Async face of the sandbox: executions run in worker threads so the event loop keeps serving other tasks.

One CapacityLimiter per event loop (an anyio RunVar), sized to the machine's cores, bounds how many
sandboxed programs run at once across the whole job.
"""

from __future__ import annotations

import functools
import os

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

from benchmarks.sandbox.isolation import Isolation
from benchmarks.sandbox.limits import SandboxLimits, SandboxResult
from benchmarks.sandbox.runner import run_python_sync

_LIMITER: RunVar[anyio.CapacityLimiter] = RunVar("sandbox_limiter")


def default_concurrency() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def sandbox_limiter() -> anyio.CapacityLimiter:
    """The shared limiter of the running event loop (created on first use, `default_concurrency()` tokens)."""
    try:
        return _LIMITER.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(default_concurrency())
        _LIMITER.set(limiter)
        return limiter


async def run_python(code: str, stdin: str = "", limits: SandboxLimits | None = None, *,
                     limiter: anyio.CapacityLimiter | None = None,
                     isolation: Isolation | None = None) -> SandboxResult:
    """Run `code` in the sandbox without blocking the event loop (see `run_python_sync`)."""
    call = functools.partial(run_python_sync, code, stdin, limits, isolation=isolation)
    return await anyio.to_thread.run_sync(call, limiter=limiter or sandbox_limiter())
