"""Live sweep progress on stderr: one rewritten status line on a terminal, plain lines otherwise (logs, CI)."""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    def __init__(self, total: int, done: int = 0, stream: TextIO | None = None, quiet: bool = False):
        self.total, self.done, self.failed, self.running, self.degraded = total, done, 0, 0, 0
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()

    def _emit(self, event: str) -> None:
        if self.quiet:
            return
        status = (f"sweep: {self.done}/{self.total} finished, {self.degraded} degraded, {self.failed} failed, "
                  f"{self.running} running")
        if self.tty:
            self.stream.write(f"\r\x1b[2K{status} | {event}"[:200])
        else:
            self.stream.write(f"{status} | {event}\n")
        self.stream.flush()

    def started(self, key: str, attempt: int) -> None:
        self.running += 1
        self._emit(f"start {key}" + (f" (attempt {attempt})" if attempt > 1 else ""))

    def finished(self, key: str, delta_pp: object, degraded: list[str] | None = None) -> None:
        self.running -= 1
        if degraded:
            self.degraded += 1
            self._emit(f"DEGRADED {key}: {'; '.join(degraded)[:160]}")
            return
        self.done += 1
        self._emit(f"done {key} delta_pp={delta_pp}")

    def failed_attempt(self, key: str, error: str, final: bool) -> None:
        self.running -= 1
        if final:
            self.failed += 1
        self._emit(f"{'FAILED' if final else 'retry'} {key}: {error[:160]}")

    def close(self) -> None:
        if self.tty and not self.quiet:
            self.stream.write("\n")
            self.stream.flush()
