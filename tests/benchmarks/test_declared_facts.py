"""Every dataset declares its facts as members of the Benchmark protocol (the engine, topologies and core look
no dataset up by name), and implements the simulation hooks in their own protocol."""

from __future__ import annotations

import pytest

from benchmarks.base import DatasetBenchmark
from benchmarks.registry import KNOWN_BENCHMARKS, get_benchmark
from core.benchmark import Benchmark, BenchmarkDefaults, rerenders_handoffs
from core.communication import SEMI_STRUCTURED, STRUCTURED_SOFT, format_contract
from core.simulation import SimulatedBenchmark

TOPOLOGIES = ("single", "independent", "sequential", "centralized", "decentralized")
PRODUCTION_ONLY = ("simulate", "failure_modes")
# a scorer whose rules change gets a new version (it is part of the condition, so of every evaluation id):
# gpqa v3 and math v3 follow protocol-v1 section 10 exactly (issue 35 items 1 and 2)
SCORER_VERSIONS = {"gpqa": "v3", "math": "v3"}


@pytest.mark.parametrize("task", KNOWN_BENCHMARKS)
def test_each_benchmark_satisfies_both_protocols_through_the_base(task: str) -> None:
    bench = get_benchmark(task)
    assert isinstance(bench, Benchmark) and isinstance(bench, SimulatedBenchmark)
    assert isinstance(bench, DatasetBenchmark)
    assert bench.splits().dataset == task
    assert bench.contract(1) != bench.contract(2)
    with pytest.raises(ValueError):
        bench.contract(3)


def test_simulation_hooks_are_not_production_members() -> None:
    production = set(Benchmark.__annotations__) | set(vars(Benchmark))
    assert not production & set(PRODUCTION_ONLY)


@pytest.mark.parametrize("task", KNOWN_BENCHMARKS)
def test_each_benchmark_declares_its_own_versioned_scorer_id(task: str) -> None:
    assert get_benchmark(task).scorer_id == f"{task}:protocol:{SCORER_VERSIONS.get(task, 'v2')}"


def test_native_call_answers_are_declared_by_bfcl_only() -> None:
    assert [t for t in KNOWN_BENCHMARKS if get_benchmark(t).answer_is_native_call] == ["bfcl"]


def test_prompt_contract_only_is_one_fact_per_dataset_and_topology() -> None:
    """Protocol section 3: Independent, SWE and Decentralized-BFCL are prompt contract only."""
    prompt_only = {(t, topology) for t in KNOWN_BENCHMARKS for topology in ("sequential", "centralized",
                                                                             "decentralized")
                   if not rerenders_handoffs(get_benchmark(t), topology)}
    assert prompt_only == {("swe", "sequential"), ("swe", "centralized"), ("swe", "decentralized"),
                           ("bfcl", "decentralized")}


def test_step_limits_and_answer_requests() -> None:
    benches = {t: get_benchmark(t) for t in KNOWN_BENCHMARKS}
    limits = {t: (b.single_step_limit, b.single_recursion_limit) for t, b in benches.items()}
    assert limits["toolhop"][0] == 9 and limits["apibank"][0] == 1 and limits["swe"] == (None, 100)
    assert {t for t, (steps, recursion) in limits.items() if steps is None and recursion == 25} == \
        {"gpqa", "hotpotqa", "math", "lcb", "apps", "bfcl"}
    assert [t for t in KNOWN_BENCHMARKS if get_benchmark(t).answer_request] == ["toolhop"]


def test_tools_and_model_code_facts() -> None:
    assert [t for t in KNOWN_BENCHMARKS if not get_benchmark(t).executes_tools] == ["bfcl"]
    assert sorted(t for t in KNOWN_BENCHMARKS if get_benchmark(t).runs_model_code) == ["apps", "lcb", "toolhop"]


@pytest.mark.parametrize("task", KNOWN_BENCHMARKS)
def test_report_vocabulary_reaches_the_format_contract(task: str) -> None:
    vocabulary = get_benchmark(task).report_vocabulary
    semi, soft = format_contract(SEMI_STRUCTURED, vocabulary), format_contract(STRUCTURED_SOFT, vocabulary)
    assert all(f"[{tag}]" in semi for tag in vocabulary.semi_tags)
    assert all(field in soft for field in vocabulary.payload_fields)
    assert (vocabulary.semi_note in semi) if vocabulary.semi_note else ("Optional tags" in semi) == bool(
        vocabulary.semi_tags)


def test_defaults_leave_a_minimal_benchmark_unchanged() -> None:
    defaults = BenchmarkDefaults()
    assert defaults.scorer_problem() is None and defaults.tool_environment() is None
    assert defaults.configure({"data_dir": None}) is defaults
    assert not defaults.answer_is_native_call and not defaults.executes_tools and not defaults.runs_model_code
    assert all(rerenders_handoffs(defaults, t) for t in TOPOLOGIES)  # type: ignore[arg-type]
