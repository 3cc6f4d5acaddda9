"""Healing: a sweep re-runs the jobs that infrastructure failures left `degraded` until each is finished.

Protocol 5.3 is unchanged: within one run a rollout gets its attempt and two same-seed retries, and a rollout that
still failed is unusable - never charged, never a score - so the run falls back as the protocol says. A heal is a
new run of that job in its own directory (engine/job/recovery.py): every usable record is replayed from the store
(no request, no charge), only the unusable rollouts are attempted again with their same seeds, earlier artifacts are
kept under `recovered/`, and every attempt stays in the card. A healed job's artifacts therefore equal those of an
uninterrupted healthy run.

When: after the sweep's own pass, in up to `--heal-rounds` rounds (default 3), each once the pool is healthy: every
task (and reflection) endpoint answers the start-up check's 1-token completion. A fleet that does not become
healthy within `--max-outage` seconds ends the healing; the jobs stay `degraded`, `sweep status` names them and
why, the sweep exits 1, and the next `sweep run` heals them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from core.errors import UsageError

HEALTH_POLL_S = 2.0


def wait_until_healthy(check: Callable[[], None], max_wait: float, poll: float = HEALTH_POLL_S) -> str | None:
    """Run `check` (raises UsageError while an endpoint fails) until it passes; None when healthy, else the last
    failure after `max_wait` seconds."""
    deadline = time.monotonic() + max_wait
    while True:
        try:
            check()
            return None
        except UsageError as exc:
            if time.monotonic() + poll > deadline:
                return str(exc)
        time.sleep(poll)


def heal_rounds(rounds: int, degraded: Callable[[], list[str]], healthy: Callable[[], str | None],
                run: Callable[[list[str]], None]) -> None:
    """Up to `rounds` rounds: while jobs are degraded and the pool is healthy, re-run them (`run(keys)`)."""
    for number in range(1, rounds + 1):
        keys = degraded()
        if not keys:
            return
        problem = healthy()
        if problem is not None:
            print(f"sweep: heal round {number} not started: the pool is not healthy ({problem}); {len(keys)} "
                  f"job(s) stay degraded (see `sweep status`; the next `sweep run` heals them)", file=sys.stderr,
                  flush=True)
            return
        print(f"sweep: heal round {number}/{rounds}: re-running {len(keys)} degraded job(s) (usable records "
              f"replayed, unusable rollouts attempted again with their seeds)", file=sys.stderr, flush=True)
        run(keys)

