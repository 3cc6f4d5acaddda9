"""Execute a ToolHop dataset tool in a separate, restricted process (see _child.py for the containment).

Needs TOOLHOP_ALLOW_DATASET_EXEC=1: the dataset's tool code is third-party Python. Results are cut to
TOOLHOP_TOOL_RESULT_CHAR_BUDGET characters (default 6,000). Every failure (tool exception, forbidden import,
CPU limit, wall-clock timeout, memory limit) comes back as "error: ..." tool text.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any, Sequence

import anyio.to_thread

from core.errors import UsageError

CHILD = Path(__file__).resolve().parent / "_child.py"
ALLOW_ENV = "TOOLHOP_ALLOW_DATASET_EXEC"
BUDGET_ENV = "TOOLHOP_TOOL_RESULT_CHAR_BUDGET"
DEFAULT_RESULT_CHARS = 6_000
DEFAULT_CPU_SECONDS = 5
DEFAULT_WALL_SECONDS = 20.0
DEFAULT_MEMORY_BYTES = 2 << 30


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
    return text[: result_budget()]


def run_tool_sync(sources: Sequence[str], name: str, arguments: dict[str, Any], *, index: int | None = None,
                  cpu_seconds: int = DEFAULT_CPU_SECONDS, wall_seconds: float = DEFAULT_WALL_SECONDS,
                  memory_bytes: int = DEFAULT_MEMORY_BYTES) -> str:
    """Run `name(**arguments)` from the dataset `sources` in a child process; tool text (errors as 'error: ...')."""
    require_exec_allowed()
    payload = json.dumps({"sources": list(sources), "index": index, "name": name, "arguments": arguments,
                          "cpu_seconds": cpu_seconds, "memory_bytes": memory_bytes,
                          "max_output_chars": 4 * result_budget() + 1_000}, default=str)
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryDirectory(prefix="toolhop-") as workdir:
        try:
            done = subprocess.run([sys.executable, "-I", str(CHILD)], input=payload, capture_output=True, text=True,
                                  timeout=wall_seconds, cwd=workdir, env=env, start_new_session=True)
        except subprocess.TimeoutExpired:
            return f"error: tool {name!r} timed out after {wall_seconds:g} s and was killed"
    if done.returncode < 0:
        signame = signal.Signals(-done.returncode).name
        reason = " (CPU time limit)" if signame in ("SIGXCPU", "SIGKILL") else ""
        return f"error: tool {name!r} process was killed by {signame}{reason}"
    try:
        reply = json.loads(done.stdout)
    except ValueError:
        tail = (done.stderr or done.stdout or "").strip()[-500:]
        return f"error: tool {name!r} process failed (exit {done.returncode}): {tail}"
    if not reply.get("ok"):
        return f"error: {reply.get('error', 'unknown failure')}"
    return format_result(reply.get("result"))


async def run_tool(sources: Sequence[str], name: str, arguments: dict[str, Any], **kwargs: Any) -> str:
    require_exec_allowed()
    return await anyio.to_thread.run_sync(partial(run_tool_sync, sources, name, arguments, **kwargs))
