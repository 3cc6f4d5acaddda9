"""Sandbox for model-written code: one limited, isolated, throw-away process per execution.

    run_python_sync(code, stdin, limits) -> SandboxResult      blocking
    await run_python(code, stdin, limits) -> SandboxResult     off the event loop, bounded by sandbox_limiter()

See runner.py for what each execution gets and isolation.py for the OS-level modes.
"""

from benchmarks.sandbox.aio import default_concurrency, run_python, sandbox_limiter
from benchmarks.sandbox.isolation import Isolation, probe
from benchmarks.sandbox.limits import SandboxLimits, SandboxResult
from benchmarks.sandbox.runner import run_python_sync, scrubbed_env

__all__ = [
    "Isolation", "SandboxLimits", "SandboxResult", "default_concurrency", "probe", "run_python",
    "run_python_sync", "sandbox_limiter", "scrubbed_env",
]
