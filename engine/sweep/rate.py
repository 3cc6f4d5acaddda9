"""The sweep's current rate of endpoint work, measured by the driver over a moving window.

`sweep status` divides the work left by a rate. The average since the run started is a poor one early on (the
first seconds are start-up: endpoints checked, stores opened, the first requests in flight) and late in a long
sweep (what the fleet did an hour ago). The driver sees every job's snapshot each second, so it keeps the total
endpoint work of its jobs (rollouts completed minus those replayed from a store or answered by the shared
evaluation cache), in model calls (each rollout weighs its cell's calls per rollout), as a series and reports the slope over the last `window(elapsed)` seconds, counted from the
moment the first rollout completed. `live.py` records it in sweep.sqlite's meta with the time it was measured; a
reader takes it only while that time is fresh and the driver is alive.
"""

from __future__ import annotations

from collections import deque
from typing import Any

RATE_META = "live_rate"  # meta: {"rate": rollouts/s or None, "at": unix time}
MIN_WINDOW_S = 30.0
WINDOW_SHARE = 0.25  # of the time since the first rollout: a long sweep's rate moves slowly


def live_work(snapshot: dict[str, Any]) -> int:
    """A job snapshot's endpoint work: its rollouts minus the replayed and the cache-answered ones."""
    return max(0, int(snapshot.get("rollouts", 0)) - int(snapshot.get("replayed", 0))
               - int(snapshot.get("shared", 0)))


class WorkRate:
    def __init__(self) -> None:
        self._per_job: dict[str, int] = {}  # the latest work of every job this driver ran
        self._finished = 0  # work of attempts that were replaced (a retried job starts its counts again)
        self._series: deque[tuple[float, int]] = deque()
        self._first: float | None = None  # when the work began
        self._idle: float | None = None  # the last update that saw no work yet

    def update(self, snapshots: dict[str, dict[str, Any]], now: float,
               weights: dict[str, float] | None = None) -> float | None:
        """Record the new snapshots (job key -> snapshot; `weights`: the job's model calls per rollout, so work
        is counted in calls and a heavy cell's rollouts weigh what they cost) and return the current rate."""
        for key, snap in snapshots.items():
            work = round(live_work(snap) * (weights or {}).get(key, 1.0))
            before = self._per_job.get(key, 0)
            if work < before:  # a new attempt of the job: what the old one did stays done
                self._finished += before
            self._per_job[key] = work
        total = self._finished + sum(self._per_job.values())
        if total == 0:
            self._idle = now
            return None
        if self._first is None:  # the work began between the last idle sample and this one
            self._first = self._idle if self._idle is not None else now
            self._series.append((self._first, 0))
        self._series.append((now, total))
        window = max(MIN_WINDOW_S, WINDOW_SHARE * (now - self._first))
        while len(self._series) > 2 and self._series[1][0] <= now - window:
            self._series.popleft()
        t0, w0 = self._series[0]
        return round((total - w0) / (now - t0), 3) if now - t0 >= 1.0 else None
