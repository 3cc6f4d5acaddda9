"""Before a benchmark that runs model-written code starts: the jail, or an explicit --unsafe-sandbox.

A benchmark declares `runs_model_code = True` (LCB, APPS, ToolHop; python_exec is offered by LCB and APPS; SWE
once configured with `--swe-repos`, whose shell_exec runs model-written commands).
Without a working jail such a job is refused with one line (exit 2) saying why and how to fix it; with
--unsafe-sandbox it goes on, says so on stderr, and job.json lists `unsafe_sandbox` among its non-conformance
reasons. The flag also allows the unsafe mode in the calling context (the job's task and what it starts).
"""

from __future__ import annotations

from benchmarks.sandbox import allow_unsafe_sandbox, require_jail_or_unsafe
from core.benchmark import Benchmark
from engine.log import get_logger

log = get_logger("engine.job")

NONCONFORMANCE_REASON = "unsafe_sandbox"


def runs_model_code(bench: Benchmark) -> bool:
    return bench.runs_model_code


def gate_sandbox(bench: Benchmark, unsafe: bool) -> None:
    """Raise SandboxUnavailable (exit 2) or warn on stderr; call from the job's own task."""
    if unsafe:
        allow_unsafe_sandbox()
        log.warning("warning: --unsafe-sandbox given: this job is marked non-conformant (unsafe_sandbox)")
    if not runs_model_code(bench):
        return
    warning = require_jail_or_unsafe(unsafe)
    if warning:
        log.warning(warning)
