"""The store's timestamps: UTC as ISO 8601 with milliseconds, as the rollout-card streams write them."""

from __future__ import annotations

import time

_SECOND: tuple[int, str] = (-1, "")  # the last whole UTC second formatted (shared by the loop and any thread)


def utc_now() -> str:
    """The UTC time as ISO 8601 with milliseconds (truncated) and a Z, e.g. 2026-12-01T21:20:46.435Z. Called several
    times per recorded call: the seconds part is formatted once per second (a third of datetime's cost)."""
    global _SECOND
    now = time.time()
    whole = int(now)
    micros = round((now - whole) * 1e6)  # as datetime.fromtimestamp rounds, then milliseconds are truncated
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    second = _SECOND
    if second[0] != whole:
        second = _SECOND = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
    return f"{second[1]}.{micros // 1000:03d}Z"
