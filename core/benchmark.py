"""The Benchmark protocol every dataset package implements, and the vocabulary it shares with the engine.

A dataset package `benchmarks/<ds>/` exposes `BENCHMARK`, an object satisfying `Benchmark`. The engine finds it
through `benchmarks.registry.get_benchmark(name)`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from core.models import AgentOutput, Row, Score


@dataclass(frozen=True)
class Splits:
    """Fixed ordered ID lists of a dataset (benchmarks/<ds>/<ds>_splits.json) and its evaluation IDs."""

    dataset: str
    train: tuple[str, ...]
    validation: tuple[str, ...]
    test: tuple[str, ...]
    eval_ids: tuple[str, ...]
    source: str = ""

    def ids(self, split: str) -> tuple[str, ...]:
        if split not in ("train", "validation", "test"):
            raise ValueError(f"unknown split {split!r}")
        return getattr(self, split)

    def as_hash_payload(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "train": list(self.train), "validation": list(self.validation),
                "test": list(self.test)}


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
class Benchmark(Protocol):
    name: str
    answer_format: str  # short human description of the required final output
    failure_modes: tuple[FailureMode, ...]

    def splits(self) -> Splits: ...

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        """Rows for `ids`, in that order. Raises core.errors.DataError naming the missing file or IDs."""
        ...

    def render_task(self, row: Row) -> str:
        """The user message for the row. Reads only row.task (never row.gold)."""
        ...

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        """OpenAI tool schemas offered natively to the answering agent ([] when none)."""
        ...

    def contract(self, version: int = 1) -> str:
        """The protected final-output contract text (protocol-v1 section 9)."""
        ...

    def score(self, row: Row, output: AgentOutput) -> Score:
        """Protocol metric: 0/1 plus feedback text. Raises only on scorer bugs (infrastructure failure)."""
        ...

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        """Gold-free key for majority voting; None = abstain."""
        ...

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        """A reply for the simulated endpoint: correct when mode is None, else exhibiting failure mode `mode`."""
        ...
