"""Resource limits of one sandboxed execution and the structured result it produces."""

from __future__ import annotations

import signal as _signal
from dataclasses import dataclass, field, replace
from typing import Any

MIB = 1024 * 1024


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to one execution.

    cpu_seconds      RLIMIT_CPU of the program (soft; hard = soft + 1)
    wall_seconds     enforced by the parent: the whole process group is killed when it elapses
    memory_bytes     RLIMIT_AS (address space) of the program
    file_size_bytes  RLIMIT_FSIZE (largest file the program may write)
    max_processes    RLIMIT_NPROC (counts threads; per user namespace when one is used)
    max_open_files   RLIMIT_NOFILE
    output_bytes     cap per stream; past it the program is stopped and the stream marked truncated
    site_packages    let the program import the interpreter's site-packages (numpy etc.), as the reference
                     harnesses do (read-only inside the jail either way)
    """

    cpu_seconds: float = 10.0
    wall_seconds: float = 12.0
    memory_bytes: int = 1024 * MIB
    file_size_bytes: int = 16 * MIB
    max_processes: int = 64
    max_open_files: int = 64
    output_bytes: int = 1 * MIB
    site_packages: bool = True

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "wall_seconds", "memory_bytes", "file_size_bytes", "max_processes",
                     "max_open_files", "output_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"SandboxLimits.{name} must be positive")

    def with_(self, **changes: Any) -> "SandboxLimits":
        return replace(self, **changes)


@dataclass(frozen=True)
class SandboxResult:
    """What happened to one execution. `exit_code` is None when the program died from a signal."""

    exit_code: int | None
    signal: int | None
    timed_out: bool
    memory_exceeded: bool
    output_limit_exceeded: bool
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    wall_seconds: float
    timeout_kind: str | None = None  # "wall" | "cpu" | None
    isolation: dict[str, str] = field(default_factory=dict)
    program_uid: int | None = None  # uid the program had on the host

    @property
    def ok(self) -> bool:
        """Exited by itself with status 0 and within every limit."""
        return (self.exit_code == 0 and not self.timed_out and not self.memory_exceeded
                and not self.output_limit_exceeded)

    @property
    def signal_name(self) -> str | None:
        if self.signal is None:
            return None
        try:
            return _signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    def stderr_tail(self, chars: int = 600) -> str:
        text = self.stderr.strip()
        return text if len(text) <= chars else "..." + text[-chars:]

    def describe(self) -> str:
        """One line naming how the execution ended."""
        if self.timed_out:
            return "time limit exceeded" + (" (CPU)" if self.timeout_kind == "cpu" else "")
        if self.memory_exceeded:
            return "memory limit exceeded"
        if self.output_limit_exceeded:
            return "output limit exceeded"
        if self.signal is not None:
            return f"killed by {self.signal_name}"
        return f"exit code {self.exit_code}"
