"""The Benchmark protocol every dataset package implements, and the vocabulary it shares with the engine.

A dataset package `benchmarks/<ds>/` exposes `BENCHMARK`, an object satisfying `Benchmark`. The engine finds it
through `benchmarks.registry.get_benchmark(name)`. Every fact about a dataset that topologies, core or the engine
need (native-call answers, step limits, hand-off re-rendering, communication tags, tools, async scoring, ...) is a
declared member of the protocol; `BenchmarkDefaults` gives the optional ones their defaults, so callers read
members directly and never look a dataset up by name. What the simulated endpoint needs is in core.simulation.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from core.communication import ReportVocabulary
from core.models import AgentOutput, Row, Score

RECURSION_LIMIT = 25  # protocol-v1 section 2.1: the default LangGraph recursion limit of a Single agent


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


@runtime_checkable
class Benchmark(Protocol):
    name: str
    answer_format: str  # short human description of the required final output
    scorer_id: str  # names the scorer's rules and their version (job identity, score annotations)

    # dataset facts (defaults in BenchmarkDefaults)
    answer_is_native_call: bool  # the answer is the native tool calls of the first message that has any
    prompt_contract_only: frozenset[str]  # topologies whose hand-offs pass raw text, no re-rendering (section 3)
    report_vocabulary: ReportVocabulary  # the dataset's optional report tags / payload fields (section 3)
    single_step_limit: int | None  # model calls of a plain-loop Single agent (None: from the recursion limit)
    single_recursion_limit: int  # LangGraph recursion limit of a Single agent
    independent_wall_clock_s: float | None  # per-row wall-clock cap of an Independent replica (None: none)
    answer_marker: str | None  # what a final Single answer must contain ...
    answer_request: str | None  # ... else this one extra request asks for it
    topology_tools: Mapping[str, tuple[str, ...]]  # topology -> names of the native tools it offers (all if absent)
    format_note: str  # short format note for answering roles (section 2.1)
    format_nudge: str  # re-attached by contract version 2 to answering roles and `nudge_roles`
    nudge_roles: tuple[str, ...]
    executes_tools: bool  # `call_tool` runs the native tools (False: a tool call gets "not available")
    runs_model_code: bool  # scoring or tools run model-written code: the sandbox jail is required

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

    async def call_tool(self, row: Row, name: str, arguments: Any) -> str:
        """Run native tool `name` for the row (only when `executes_tools`)."""
        ...

    def contract(self, version: int = 1) -> str:
        """The protected final-output contract text (protocol-v1 section 9)."""
        ...

    def score(self, row: Row, output: AgentOutput) -> Score:
        """Protocol metric: 0/1 plus feedback text. Raises only on scorer bugs (infrastructure failure)."""
        ...

    async def score_async(self, row: Row, output: AgentOutput) -> Score:
        """`score` for the engine's event loop (a benchmark whose scorer blocks runs it off the loop)."""
        ...

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        """Gold-free key for majority voting; None = abstain."""
        ...

    async def finish_output(self, row: Row, output: AgentOutput) -> AgentOutput:
        """The benchmark's last word on a rollout's output (e.g. the selected member's checkout diff)."""
        ...

    def scorer_problem(self) -> str | None:
        """Why the scorer cannot run as configured (a preflight), None when it can."""
        ...

    def configure(self, options: dict[str, Any]) -> "Benchmark":
        """A copy configured by the dataset's command-line options (and `data_dir`)."""
        ...

    def check_ready(self) -> None:
        """Raise core.errors.UsageError when the benchmark cannot run as configured."""
        ...

    def tool_environment(self) -> dict[str, Any] | None:
        """What the tools read (job identity and evaluation condition); None when nothing to record."""
        ...


class BenchmarkDefaults:
    """The defaults of the protocol's optional members: subclass it and declare only what differs."""

    answer_is_native_call: bool = False
    prompt_contract_only: frozenset[str] = frozenset()
    report_vocabulary: ReportVocabulary = ReportVocabulary()
    single_step_limit: int | None = None
    single_recursion_limit: int = RECURSION_LIMIT
    independent_wall_clock_s: float | None = None
    answer_marker: str | None = None
    answer_request: str | None = None
    topology_tools: Mapping[str, tuple[str, ...]] = MappingProxyType({})
    format_note: str = ""
    format_nudge: str = ""
    nudge_roles: tuple[str, ...] = ()
    executes_tools: bool = False
    runs_model_code: bool = False

    def score(self, row: Row, output: AgentOutput) -> Score:
        raise NotImplementedError

    async def call_tool(self, row: Row, name: str, arguments: Any) -> str:
        raise NotImplementedError(f"{type(self).__name__} executes no tools")

    async def score_async(self, row: Row, output: AgentOutput) -> Score:
        return self.score(row, output)

    async def finish_output(self, row: Row, output: AgentOutput) -> AgentOutput:
        return output

    def scorer_problem(self) -> str | None:
        return None

    def configure(self, options: dict[str, Any]) -> Any:
        return self

    def check_ready(self) -> None:
        return None

    def tool_environment(self) -> dict[str, Any] | None:
        return None


def rerenders_handoffs(bench: Benchmark, topology: str) -> bool:
    """Whether `topology` re-renders hand-offs into the communication format for `bench` (protocol section 3)."""
    return topology not in bench.prompt_contract_only
