"""Sandbox for model-written code: one limited, jailed, throw-away process per execution.

    run_python_sync(code, stdin, limits) -> SandboxResult      blocking
    await run_python(code, stdin, limits) -> SandboxResult     off the event loop, bounded by sandbox_limiter()

See jail.py for what the program can see, isolation.py for the no-silent-fallback rule, runner.py for one
execution.
"""

from benchmarks.sandbox.aio import default_concurrency, run_python, sandbox_limiter
from benchmarks.sandbox.isolation import (
    Isolation, SandboxUnavailable, allow_unsafe_sandbox, check, probe, require_jail_or_unsafe,
)
from benchmarks.sandbox.limits import SandboxLimits, SandboxResult
from benchmarks.sandbox.runner import run_python_sync, scrubbed_env

__all__ = [
    "Isolation", "SandboxLimits", "SandboxResult", "SandboxUnavailable", "allow_unsafe_sandbox", "check",
    "default_concurrency", "probe", "require_jail_or_unsafe", "run_python", "run_python_sync", "sandbox_limiter",
    "scrubbed_env",
]
