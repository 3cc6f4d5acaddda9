"""Per-endpoint health and backpressure: plain state, no I/O (the pool in engine.chat.endpoint drives it).

* Health: `eject_after` consecutive connection failures (nothing was answered: refused, reset, disconnected)
  eject an endpoint; only a successful probe (GET /models) re-admits it. A success resets the count.
* Backpressure: a 429 (or 503) carrying Retry-After pauses the endpoint until that time and halves its in-flight
  limit (never below 1); every `raise_after` successes in a row raise it by one again, up to its capacity
  (additive increase, multiplicative decrease).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from core.errors import EndpointConnectionError

DEFAULT_RETRY_AFTER_S = 1.0  # a 429 without Retry-After still pauses the endpoint briefly
DEFAULT_MAX_OUTAGE_S = 900.0  # --max-outage: 15 minutes
MAX_REDELIVERIES = 8  # re-sends of one request that got no HTTP response while endpoints looked healthy
EventSink = Callable[[str, dict[str, Any]], Awaitable[None]]


class PoolOutage(EndpointConnectionError):
    """No endpoint of the pool came back within --max-outage: requests fail fast until one is re-admitted."""

    kind = "pool_outage"


@dataclass
class EndpointHealth:
    capacity: int
    eject_after: int = 2
    raise_after: int = 8
    healthy: bool = True
    consecutive_failures: int = 0
    ejected_at: float | None = None
    paused_until: float = 0.0
    limit: int = 0
    successes_since_cut: int = 0

    def __post_init__(self) -> None:
        self.limit = self.limit or self.capacity

    def usable(self, now: float) -> bool:
        return self.healthy and now >= self.paused_until

    def connection_failed(self, now: float) -> bool:
        """Count one connection failure; True when this one ejects the endpoint."""
        self.consecutive_failures += 1
        if self.healthy and self.consecutive_failures >= self.eject_after:
            self.healthy = False
            self.ejected_at = now
            return True
        return False

    def readmit(self, now: float) -> float:
        """A probe succeeded: healthy again; returns how long it was out (seconds)."""
        down = 0.0 if self.ejected_at is None else now - self.ejected_at
        self.healthy, self.consecutive_failures, self.ejected_at = True, 0, None
        return down

    def succeeded(self) -> bool:
        """Count one answered request; True when the in-flight limit was raised."""
        self.consecutive_failures = 0
        if self.limit >= self.capacity:
            return False
        self.successes_since_cut += 1
        if self.successes_since_cut >= self.raise_after:
            self.successes_since_cut = 0
            self.limit += 1
            return True
        return False

    def throttled(self, now: float, retry_after: float | None) -> float:
        """Retry-After as backpressure: pause and halve the limit; returns the pause in seconds."""
        pause = DEFAULT_RETRY_AFTER_S if retry_after is None else max(0.0, retry_after)
        self.paused_until = max(self.paused_until, now + pause)
        self.limit = max(1, self.limit // 2)
        self.successes_since_cut = 0
        return pause
