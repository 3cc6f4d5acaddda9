"""Backoff between the same-seed attempts of a rollout (or a reflection call): exponential with keyed jitter,
or the endpoint's Retry-After when it gave one."""

from __future__ import annotations

import random
from dataclasses import dataclass

from core.errors import InfrastructureError


@dataclass(frozen=True)
class RetryPolicy:
    base_delay: float = 0.5
    max_delay: float = 30.0
    honour_retry_after: bool = True

    def delay(self, attempt: int, exc: BaseException | None, key: str) -> float:
        if self.honour_retry_after and isinstance(exc, InfrastructureError) and exc.retry_after is not None:
            return min(exc.retry_after, self.max_delay)
        if self.base_delay <= 0:
            return 0.0
        jitter = random.Random(f"{key}|{attempt}").uniform(0.5, 1.0)  # keyed, never a shared RNG
        return min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * jitter
