"""Deterministic fault injection for the simulated endpoint.

A `FaultPlan` decides, for each incoming request, whether it is answered normally or with one fault kind:

    http_500, http_503      5xx with a JSON error body
    http_429                429 with a `Retry-After: <retry_after_s>` header
    slow                    the response is held for `slow_s` seconds (past the client's timeout), then sent
    reset                   the TCP connection is aborted (RST) without any response
    malformed_json          200 whose body is not JSON
    empty_choices           200 with a well-formed body whose `"choices"` is `[]`
    context_overflow        400 with a vLLM-like "This model's maximum context length is ..." error

Poison 200s (a proxy or server bug; each must become an infrastructure failure of that attempt, never a crash):

    deep_nesting            200 whose body nests arrays 50,000 levels deep (RecursionError in a JSON parser)
    huge_int                200 whose usage holds a 5,000-digit integer (past Python's int digit limit)
    wrong_types             200 that is JSON but not the chat schema (message content is an object)
    truncated_json          200 whose JSON body is cut off half way (Content-Length matches what is sent)
    html_200                200 with an HTML page (a captive portal or proxy error page)

And one that is NOT a fault of the transport (protocol-v1 5.3: a usable observation with a malformed answer):

    empty_content           200, well formed, message content "" and no tool calls (finish_reason "length")

Decisions are pure functions of values, never of timing or concurrency (except the explicit "Nth request overall"
schedule, which is as deterministic as the caller's request order):

* The *logical request key* is sha256 of the canonical JSON of {model, messages, tools, seed} (`request_key`).
  The *occurrence* of a request is how many earlier requests carried the same key (0 for the first). A same-seed
  retry of a faulted request therefore has occurrence 1 and gets an independent draw.
* Explicit `ScheduledFault`s are checked first, in order; the first that matches wins.
* Otherwise one uniform u in [0, 1) is derived from sha256 of (plan seed, key, occurrence) and the kinds are
  walked in `FAULT_KINDS` order with cumulative rates: the first kind whose cumulative rate exceeds u is injected.
  Rates must sum to at most 1; all rates are 0 by default (no faults).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from core.canonical import content_hash

FAULT_KINDS: tuple[str, ...] = (
    "http_500",
    "http_503",
    "http_429",
    "slow",
    "reset",
    "malformed_json",
    "empty_choices",
    "context_overflow",
    "deep_nesting",
    "huge_int",
    "wrong_types",
    "truncated_json",
    "html_200",
    "empty_content",
)
POISON_KINDS: tuple[str, ...] = ("deep_nesting", "huge_int", "wrong_types", "truncated_json", "html_200")


def request_key(body: Mapping[str, Any]) -> str:
    """Logical request key: sha256 of canonical JSON of {model, messages, tools, seed} (absent -> null)."""
    return content_hash(
        {
            "model": body.get("model"),
            "messages": body.get("messages"),
            "tools": body.get("tools"),
            "seed": body.get("seed"),
        }
    )


def unit_draw(*parts: object) -> float:
    """A uniform number in [0, 1) from sha256 of the '|'-joined parts (first 8 bytes, big-endian)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


@dataclass(frozen=True)
class ScheduledFault:
    """An explicit fault. Every field that is set must match; unset fields match anything.

    * `nth`: the 0-based index of the request overall (arrival order at the server).
    * `every`: every `every`-th request overall (indexes every-1, 2*every-1, ...).
    * `key`: the logical request key (exact, or a prefix of at least 8 hex digits).
    * `row_id`: the row the request was matched to.
    * `model`: the requested model id.
    * `occurrence`: which occurrence to hit (0-based). Counted per key when `key` is set, otherwise per row when
      `row_id` is set, otherwise per key. None = every occurrence.
    """

    kind: str
    nth: int | None = None
    every: int | None = None
    key: str | None = None
    row_id: str | None = None
    model: str | None = None
    occurrence: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {', '.join(FAULT_KINDS)}")
        if self.key is not None and len(self.key) < 8:
            raise ValueError("a scheduled fault key needs at least 8 hex digits")
        if self.every is not None and self.every < 1:
            raise ValueError("a scheduled fault's `every` must be >= 1")

    def matches(self, req: "RequestFacts") -> bool:
        if self.nth is not None and req.index != self.nth:
            return False
        if self.every is not None and req.index % self.every != self.every - 1:
            return False
        if self.key is not None and not req.key.startswith(self.key):
            return False
        if self.row_id is not None and req.row_id != self.row_id:
            return False
        if self.model is not None and req.model != self.model:
            return False
        if self.occurrence is not None:
            counted = req.row_occurrence if (self.key is None and self.row_id is not None) else req.occurrence
            if counted != self.occurrence:
                return False
        return True


@dataclass(frozen=True)
class RequestFacts:
    """What the fault plan may look at for one request."""

    index: int
    key: str
    occurrence: int
    row_id: str | None = None
    row_occurrence: int | None = None
    model: str | None = None


@dataclass(frozen=True)
class FaultPlan:
    """Per-kind rates and/or an explicit schedule, plus the knobs of the fault responses."""

    rates: Mapping[str, float] = field(default_factory=dict)
    schedule: Sequence[ScheduledFault] = ()
    seed: int = 0
    retry_after_s: float = 0.0
    slow_s: float = 30.0
    context_length: int = 32768

    def __post_init__(self) -> None:
        for kind, rate in self.rates.items():
            if kind not in FAULT_KINDS:
                raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")
            if not 0.0 <= float(rate) <= 1.0:
                raise ValueError(f"fault rate for {kind} must be in [0, 1], got {rate!r}")
        if sum(float(r) for r in self.rates.values()) > 1.0 + 1e-12:
            raise ValueError("fault rates must sum to at most 1")
        if self.retry_after_s < 0 or self.slow_s < 0:
            raise ValueError("retry_after_s and slow_s must be >= 0")
        object.__setattr__(self, "rates", dict(self.rates))
        object.__setattr__(self, "schedule", tuple(self.schedule))

    @property
    def active(self) -> bool:
        return bool(self.schedule) or any(float(r) > 0 for r in self.rates.values())

    def decide(self, req: RequestFacts) -> str | None:
        """The fault kind to inject for this request, or None to answer normally."""
        for entry in self.schedule:
            if entry.matches(req):
                return entry.kind
        if not any(float(r) > 0 for r in self.rates.values()):
            return None
        u = unit_draw("fault", self.seed, req.key, req.occurrence)
        cumulative = 0.0
        for kind in FAULT_KINDS:
            cumulative += float(self.rates.get(kind, 0.0))
            if u < cumulative:
                return kind
        return None


NO_FAULTS = FaultPlan()


def parse_fault_spec(spec: str) -> tuple[str, float]:
    """Parse a command-line `KIND=RATE` pair. Raises ValueError with a one-line message."""
    kind, sep, rate_text = spec.partition("=")
    kind = kind.strip()
    if not sep:
        raise ValueError(f"--fault expects KIND=RATE, got {spec!r}")
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")
    try:
        rate = float(rate_text)
    except ValueError:
        raise ValueError(f"fault rate for {kind} is not a number: {rate_text!r}") from None
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"fault rate for {kind} must be in [0, 1], got {rate_text}")
    return kind, rate
