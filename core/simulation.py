"""What the labelled simulated endpoint (engine/sim) needs of a benchmark to fake a policy.

These hooks are not part of the production `core.benchmark.Benchmark` protocol: only engine/sim reads them.
Every dataset package implements both; a test double may implement only `Benchmark`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from core.benchmark import Benchmark
from core.models import Row


@dataclass(frozen=True)
class FailureMode:
    """A way an answer goes wrong that the scorer's feedback names.

    Used by the labelled simulated endpoint: its policy exhibits an unaddressed mode with probability `rate`;
    a system prompt that contains `remedy` addresses it. `feedback_pattern` is a regular expression that matches
    the scorer feedback produced when the mode occurs (the simulated reflection model reads feedback with it).
    """

    name: str
    feedback_pattern: str
    remedy: str
    rate: float


@dataclass(frozen=True)
class SimReply:
    """A simulated assistant message: text content and/or OpenAI-style tool calls ({"name", "arguments"})."""

    content: str | None
    tool_calls: tuple[dict[str, Any], ...] = field(default_factory=tuple)


@runtime_checkable
class SimulatedBenchmark(Benchmark, Protocol):
    """A benchmark the simulated endpoint can answer for: its failure modes and a reply per mode."""

    @property
    def failure_modes(self) -> tuple[FailureMode, ...]: ...

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        """A reply for the simulated endpoint: correct when mode is None, else exhibiting failure mode `mode`."""
        ...
