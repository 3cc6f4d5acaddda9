"""`python_exec(code, stdin)`: run a program in the sandbox (10 s) and return a text report of the run."""

from __future__ import annotations

from typing import Any

from benchmarks.sandbox import SandboxLimits, SandboxResult, run_python, run_python_sync
from benchmarks.sandbox.redact import redact

PYTHON_EXEC_LIMITS = SandboxLimits(cpu_seconds=10.0, wall_seconds=10.0, output_bytes=64 * 1024)
REPORT_CHARS = 4_000

PYTHON_EXEC_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "python_exec",
        "description": ("Run a Python 3 program in a sandbox (10 s limit, no network, no files but its own "
                        "temporary working directory) with the given standard input; returns stdout, stderr and "
                        "the exit status."),
        "parameters": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "complete Python program"},
                "stdin": {"type": "string", "description": "standard input for the program", "default": ""},
            },
            "required": ["code"],
            "additionalProperties": False,
        },
    },
}


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars] + f"\n... [{len(text) - chars} more characters cut]"


def format_result(result: SandboxResult) -> str:
    """The tool's text: status, stdout, stderr; capped and scrubbed of secrets (it is recorded and shown)."""
    lines = [f"status: {result.describe()}"]
    stdout = _cut(result.stdout, REPORT_CHARS) + (" [output truncated]" if result.stdout_truncated else "")
    lines.append("stdout:\n" + (stdout if result.stdout else "(empty)"))
    if result.stderr:
        stderr = result.stderr_tail(REPORT_CHARS // 2)
        lines.append("stderr:\n" + stderr + (" [output truncated]" if result.stderr_truncated else ""))
    return redact("\n".join(lines), 2 * REPORT_CHARS)


def python_exec(code: str, stdin: str = "", limits: SandboxLimits = PYTHON_EXEC_LIMITS) -> str:
    if not isinstance(code, str) or not code.strip():
        return "Error: no code given"
    return format_result(run_python_sync(code, stdin or "", limits))


async def python_exec_async(code: str, stdin: str = "", limits: SandboxLimits = PYTHON_EXEC_LIMITS) -> str:
    """Async implementation: the program runs off the event loop under the shared sandbox limiter."""
    if not isinstance(code, str) or not code.strip():
        return "Error: no code given"
    return format_result(await run_python(code, stdin or "", limits))
