"""Run a program against an ordered list of tests in the sandbox and turn the first failure into feedback.

Tests run one sandboxed process each, in order, stopping at the first failure (a row passes only if every
selected test passes). `run_suite_sync` and `run_suite_async` share the judging; the async one runs each test
off the event loop under the shared sandbox limiter. Feedback is capped and scrubbed of secrets (redact.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from benchmarks.sandbox.aio import run_python
from benchmarks.sandbox.limits import SandboxLimits, SandboxResult
from benchmarks.sandbox.redact import redact
from benchmarks.sandbox.runner import run_python_sync

Judge = Callable[[SandboxResult], "str | None"]  # None = passed, else "expected ..., got ..." text


@dataclass(frozen=True)
class TestCase:
    index: int  # 1-based position in the dataset's test list
    program: str
    stdin: str
    judge: Judge
    requires_exit_zero: bool = True


@dataclass(frozen=True)
class SuiteOutcome:
    passed: bool
    kind: str  # "pass" | "wrong_answer" | "runtime_error" | "timeout" | "memory" | "output_limit"
    feedback: str
    failed_test: int | None
    tests_run: int
    tests_total: int


def excerpt(value: object, chars: int = 200) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.strip()
    return repr(text if len(text) <= chars else text[:chars] + "...")


def check(case: TestCase, result: SandboxResult, limits: SandboxLimits) -> tuple[str, str] | None:
    """(kind, feedback) for a failed test, or None when it passed."""
    k = case.index
    if result.timed_out:
        return "timeout", f"Time limit exceeded on test {k} ({limits.cpu_seconds:g} s)."
    if result.memory_exceeded:
        return "memory", f"Memory limit exceeded on test {k} ({limits.memory_bytes // (1024 * 1024)} MiB)."
    if result.output_limit_exceeded:
        return "output_limit", f"Output limit exceeded on test {k} (more than {limits.output_bytes} bytes)."
    if result.signal is not None or (case.requires_exit_zero and result.exit_code != 0):
        tail = result.stderr_tail(500) or "(no stderr)"
        return "runtime_error", f"Runtime error on test {k} ({result.describe()}): {tail}"
    verdict = case.judge(result)
    if verdict is not None:
        return "wrong_answer", f"Wrong answer on test {k}: {verdict}"
    return None


def _outcome(failure: tuple[str, str] | None, case: TestCase | None, run: int, total: int) -> SuiteOutcome:
    if failure is None:
        return SuiteOutcome(True, "pass", f"All {total} tests passed.", None, run, total)
    kind, feedback = failure
    # feedback quotes program output: it is stored, exported in cards and shown to the reflection model
    return SuiteOutcome(False, kind, redact(feedback), case.index if case else None, run, total)


def run_suite_sync(cases: Sequence[TestCase], limits: SandboxLimits) -> SuiteOutcome:
    for n, case in enumerate(cases, 1):
        failure = check(case, run_python_sync(case.program, case.stdin, limits), limits)
        if failure is not None:
            return _outcome(failure, case, n, len(cases))
    return _outcome(None, None, len(cases), len(cases))


async def run_suite_async(cases: Sequence[TestCase], limits: SandboxLimits) -> SuiteOutcome:
    for n, case in enumerate(cases, 1):
        failure = check(case, await run_python(case.program, case.stdin, limits), limits)
        if failure is not None:
            return _outcome(failure, case, n, len(cases))
    return _outcome(None, None, len(cases), len(cases))
