"""One process per job directory: `job_lock(out)` holds an exclusive flock on OUT/.job.lock while the job runs (the
kernel drops it when the process dies, so `sweep status` tells a live job from a stale one by it)."""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.errors import UsageError


@contextmanager
def job_lock(out: Path) -> Iterator[None]:
    """One process per job directory: a second `job` on the same --out is refused while the first runs."""
    fh = open(out / ".job.lock", "a+")
    try:
        for _ in range(10):  # `sweep status` holds a shared lock for an instant when it probes (engine/sweep/live.py)
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(0.02)
        else:
            raise UsageError(f"another process is running the job in {out}; wait for it or use another --out")
        yield
    finally:
        fh.close()
