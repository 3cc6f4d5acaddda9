"""runtime_implementation_id: protocol-v1 section 5.6 ("condition: ..., runtime_implementation_id, ...") -- the
condition names the runtime implementation that ran it, so a LangGraph, CrewAI, AutoGen or Agents SDK job names
that framework runtime, not the engine's own (native) one (issue 35 item 7)."""

from __future__ import annotations

import pytest

from core.canonical import content_hash
from core.cell import FRAMEWORKS
from core.protocol import RUNTIME_IMPLEMENTATION_IDS, condition, runtime_implementation_id

S56 = "protocol-v1 §5.6 condition.runtime_implementation_id"
TABLE = [
    ("native", "sequential", "mas-promptbench-engine/anyio-native-v1"),
    ("langgraph", "sequential", "mas-promptbench-engine/langgraph-gateway-v1"),
    ("crewai", "sequential", "mas-promptbench-engine/crewai-gateway-v1"),
    ("autogen", "centralized", "mas-promptbench-engine/autogen-gateway-v1"),
    ("openai_agents", "decentralized", "mas-promptbench-engine/openai-agents-sdk-gateway-v1"),
]


def _condition(framework: str, topology: str) -> dict[str, object]:
    return condition(task="t", topology=topology, framework=framework, communication="freeform", team_size=4,
                     task_model="qwen", initial_bundle_sha256="b", scorer_id="s", split_sha256="x")


def test_every_framework_has_one_id_of_its_own():
    assert set(RUNTIME_IMPLEMENTATION_IDS) == set(FRAMEWORKS), S56
    assert len(set(RUNTIME_IMPLEMENTATION_IDS.values())) == len(FRAMEWORKS), S56
    assert {f for f, _, _ in TABLE} == set(FRAMEWORKS)


@pytest.mark.parametrize("framework,topology,expected", TABLE)
def test_the_condition_names_the_runtime_that_runs_the_cell(framework, topology, expected):
    assert runtime_implementation_id(framework) == expected, S56
    cond = _condition(framework, topology)
    assert cond["runtime_implementation_id"] == expected, S56


# content_hash of _condition(...) before issue 35 (every framework then named the native runtime)
NATIVE_BEFORE = "f1dd53f975e6e181227ddaa93e71993a43039a2b3f4388108b95822caceea230"
CREWAI_BEFORE = "c8576032ce6762a3687c8eb2a31757e0e18d5af657ac74a73b9d7f853534b452"


def test_only_the_framework_runtimes_change_their_condition_id():
    """The native condition_id is the one it was (its jobs and cached evaluations keep their ids); a framework
    cell's condition_id moves, and differs from the native cell's in the framework and the runtime id only."""
    native = _condition("native", "sequential")
    assert content_hash(native) == NATIVE_BEFORE, S56
    crew = _condition("crewai", "sequential")
    assert content_hash(crew) != CREWAI_BEFORE, S56
    assert {k for k in native if native[k] != crew[k]} == {"framework", "runtime_implementation_id"}


def test_an_unknown_framework_has_no_id():
    with pytest.raises(ValueError, match="no runtime implementation"):
        runtime_implementation_id("dspy")
