"""The one retry path of the engine (tenacity): same-seed attempts of a rollout and of a recorded model call.

Backoff between attempts is exponential with keyed jitter, or the endpoint's Retry-After when it gave one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tenacity import (AsyncRetrying, RetryCallState, retry_base, retry_if_exception_type,
                      retry_if_not_exception_type, stop_after_attempt)

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


def retrying(policy: RetryPolicy, key: str, attempts: int,
             retry_on: type[BaseException] | tuple[type[BaseException], ...],
             never: tuple[type[BaseException], ...] = (), *, reraise_last: bool = True) -> AsyncRetrying:
    """Up to `attempts` attempts; an exception of `retry_on` (and not of `never`) is retried after `policy.delay`
    (keyed by `key`), any other exception propagates unchanged, and so does the last attempt's error unless
    `reraise_last` is False: then the loop just ends (the caller kept that error as data)."""

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        return policy.delay(state.attempt_number, error, key)

    retry: retry_base = retry_if_exception_type(retry_on)
    if never:
        retry = retry & retry_if_not_exception_type(never)
    if not reraise_last:  # tenacity returns the callback's value instead of raising: the `async for` ends
        return AsyncRetrying(stop=stop_after_attempt(attempts), wait=wait, retry=retry,
                             retry_error_callback=lambda state: None)
    return AsyncRetrying(stop=stop_after_attempt(attempts), wait=wait, retry=retry, reraise=True)
