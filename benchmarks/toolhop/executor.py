"""Execute a ToolHop dataset tool in the sandbox's jail (see benchmarks/sandbox/jail.py), with _child.py's
restricted namespace inside it as a second layer.

Needs TOOLHOP_ALLOW_DATASET_EXEC=1: the dataset's tool code is third-party Python. Results are cut to
TOOLHOP_TOOL_RESULT_CHAR_BUDGET characters (default 6,000) and scrubbed of secret-shaped strings. Every failure
(tool exception, forbidden import, CPU limit, wall-clock timeout, memory limit) comes back as "error: ..." tool
text; no jail (and no --unsafe-sandbox) raises SandboxUnavailable.
"""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path
from typing import Any, Sequence

import anyio.to_thread

from core.errors import UsageError

from benchmarks.sandbox.aio import sandbox_limiter
from benchmarks.sandbox.limits import MIB, SandboxLimits, SandboxResult
from benchmarks.sandbox.redact import redact
from benchmarks.sandbox.runner import run_python_sync

CHILD = Path(__file__).resolve().parent / "_child.py"
CHILD_SOURCE = CHILD.read_text(encoding="utf-8")
ALLOW_ENV = "TOOLHOP_ALLOW_DATASET_EXEC"
BUDGET_ENV = "TOOLHOP_TOOL_RESULT_CHAR_BUDGET"
DEFAULT_RESULT_CHARS = 6_000
DEFAULT_CPU_SECONDS = 5
DEFAULT_WALL_SECONDS = 20.0
DEFAULT_MEMORY_BYTES = 2 << 30


def toolhop_limits(cpu_seconds: int = DEFAULT_CPU_SECONDS, wall_seconds: float = DEFAULT_WALL_SECONDS,
                   memory_bytes: int = DEFAULT_MEMORY_BYTES) -> SandboxLimits:
    return SandboxLimits(cpu_seconds=cpu_seconds, wall_seconds=wall_seconds, memory_bytes=memory_bytes,
                         output_bytes=4 * MIB)


class DatasetExecDisabled(UsageError):
    """ToolHop tools were called without TOOLHOP_ALLOW_DATASET_EXEC=1."""

    kind = "toolhop_exec_disabled"


def exec_allowed() -> bool:
    return os.environ.get(ALLOW_ENV) == "1"


def require_exec_allowed() -> None:
    if not exec_allowed():
        raise DatasetExecDisabled(
            "ToolHop tools execute the dataset's own Python source; set TOOLHOP_ALLOW_DATASET_EXEC=1 to allow it "
            "(it runs in a separate restricted process with CPU, memory and time limits)"
        )


def result_budget() -> int:
    try:
        return max(1, int(os.environ.get(BUDGET_ENV, DEFAULT_RESULT_CHARS)))
    except ValueError:
        return DEFAULT_RESULT_CHARS


def format_result(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return redact(text[: result_budget()], result_budget())


def _error(text: str) -> str:
    return redact(f"error: {text}", 2_000)


def run_tool_sync(sources: Sequence[str], name: str, arguments: dict[str, Any], *, index: int | None = None,
                  cpu_seconds: int = DEFAULT_CPU_SECONDS, wall_seconds: float = DEFAULT_WALL_SECONDS,
                  memory_bytes: int = DEFAULT_MEMORY_BYTES) -> str:
    """Run `name(**arguments)` from the dataset `sources` in the jail; tool text (errors as 'error: ...')."""
    require_exec_allowed()
    payload = json.dumps({"sources": list(sources), "index": index, "name": name, "arguments": arguments,
                          "cpu_seconds": cpu_seconds, "memory_bytes": memory_bytes,
                          "max_output_chars": 4 * result_budget() + 1_000}, default=str)
    result = run_python_sync(CHILD_SOURCE, payload, toolhop_limits(cpu_seconds, wall_seconds, memory_bytes))
    return _tool_text(name, result, wall_seconds)


def _tool_text(name: str, result: SandboxResult, wall_seconds: float) -> str:
    if result.timed_out and result.timeout_kind == "wall":
        return _error(f"tool {name!r} timed out after {wall_seconds:g} s and was killed")
    if result.signal is not None or result.timed_out:
        signame = result.signal_name or "SIGXCPU"
        reason = " (CPU time limit)" if signame in ("SIGXCPU", "SIGKILL") else ""
        return _error(f"tool {name!r} process was killed by {signame}{reason}")
    try:
        reply = json.loads(result.stdout)
    except ValueError:
        tail = (result.stderr or result.stdout or "").strip()[-500:]
        return _error(f"tool {name!r} process failed ({result.describe()}): {tail}")
    if not reply.get("ok"):
        return _error(str(reply.get("error", "unknown failure")))
    return format_result(reply.get("result"))


async def run_tool(sources: Sequence[str], name: str, arguments: dict[str, Any], **kwargs: Any) -> str:
    require_exec_allowed()
    return await anyio.to_thread.run_sync(partial(run_tool_sync, sources, name, arguments, **kwargs),
                                          limiter=sandbox_limiter())
