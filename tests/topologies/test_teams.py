"""Team specs and seed prompt files for every dataset, multi-agent topology and team size."""

from __future__ import annotations

import pytest

from core.cell import TASKS, TEAM_SIZES
from core.errors import UsageError
from topologies.prompts import PROMPT_ROOT, seed_bundle
from topologies.registry import get_topology
from topologies.teams import TASK_PLACEHOLDER, team_spec

MULTI = ("independent", "sequential", "centralized", "decentralized")
SHARED_ROLE = {"gpqa": "solver", "hotpotqa": "solver", "math": "solver", "toolhop": "solver", "apibank": "solver",
               "lcb": "coder", "apps": "coder", "bfcl": "caller", "swe": "patcher"}
STAGES_4 = {  # protocol-v1 section 2.3
    "gpqa": ["analyzer", "solver", "critic", "verifier"],
    "math": ["decomposer", "computer", "checker", "verifier"],
    "hotpotqa": ["planner", "retriever", "reasoner", "writer"],
    "lcb": ["analyzer", "coder", "tester", "debugger"],
    "apps": ["analyzer", "coder", "tester", "debugger"],
    "bfcl": ["analyzer", "inspector", "caller", "verifier"],
    "swe": ["investigator", "planner", "patcher", "tester"],
    "toolhop": ["planner", "caller", "checker", "verifier"],
    "apibank": ["dialogue_reader", "schema_mapper", "argument_planner", "verifier"],
}
WORKERS_4 = {  # protocol-v1 section 2.4
    "gpqa": ["analyzer_worker", "solver_worker", "verifier_worker"],
    "math": ["decomposer_worker", "computation_worker", "verifier_worker"],
    "hotpotqa": ["retriever_worker", "reasoner_worker", "writer_worker"],
    "lcb": ["analyzer_worker", "coder_worker", "tester_worker"],
    "apps": ["analyzer_worker", "coder_worker", "tester_worker"],
    "bfcl": ["inspector_worker", "caller_worker", "validator_worker"],
    "swe": ["navigator_worker", "patcher_worker", "tester_worker"],
    "toolhop": ["planner_worker", "caller_worker", "validator_worker"],
    "apibank": ["inspector_worker", "caller_worker", "validator_worker"],
}
CAPS = {"gpqa": 16, "math": 18, "hotpotqa": 18, "bfcl": 24, "lcb": 26, "apps": 26, "swe": 30, "toolhop": 18,
        "apibank": 18}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("topology", MULTI)
@pytest.mark.parametrize("n", TEAM_SIZES)
def test_roles_and_seed_prompts_exist_for_every_cell(task, topology, n):
    roles = get_topology(topology, n).roles(task, n)
    bundle = seed_bundle(topology, task, roles)
    assert list(bundle.roles) == roles and len(set(roles)) == len(roles)
    if topology == "independent":
        assert roles == [SHARED_ROLE[task]]
    elif topology == "decentralized":
        assert roles == ["debater"]
    elif topology == "sequential":
        assert len(roles) == n
    else:
        assert len(roles) == n and roles[0] == {2: "manager", 4: "manager", 8: "manager_r8", 10: "manager_r10"}[n]
    for text in bundle.roles.values():
        assert 0 < len(text) < 500 and "PROTECTED" not in text  # one short role description


@pytest.mark.parametrize("task", TASKS)
def test_default_team_matches_the_protocol_tables(task):
    spec = team_spec(task)
    assert [s.role for s in spec.stages(4)] == STAGES_4[task]
    assert [w.name for w in spec.centralized(4).workers] == WORKERS_4[task]
    for n in TEAM_SIZES:
        team = spec.centralized(n)
        assert team.max_turns == (CAPS[task] // 2 if n == 2 else CAPS[task])
        assert all(w.description.strip() for w in team.workers)
        for stage in spec.stages(n):
            assert TASK_PLACEHOLDER in stage.task
    assert spec.rounds() == 2


def test_hotpotqa_stages_by_size():
    spec = team_spec("hotpotqa")
    assert [s.role for s in spec.stages(2)] == ["retriever", "writer"]
    assert [s.role for s in spec.stages(8)] == ["query_decomposer", "planner", "searcher", "retriever",
                                                "evidence_filter", "reasoner", "citation_compiler", "writer"]
    assert [s.role for s in spec.stages(10)] == ["query_decomposer", "planner", "searcher", "entity_disambiguator",
                                                 "retriever", "evidence_filter", "reasoner", "citation_compiler",
                                                 "writer", "answer_simplifier"]


@pytest.mark.parametrize("task", TASKS)
def test_each_dataset_folder_has_the_ten_sequential_roles(task):
    files = sorted(p.stem for p in (PROMPT_ROOT / "sequential" / task).glob("*.txt"))
    assert len(files) == 10 and set(s.role for s in team_spec(task).stages(10)) == set(files)


def test_registry_signatures_and_errors():
    assert get_topology("single").name == "single"
    top = get_topology("centralized", 8, "semi_structured")
    assert (top.team_size, top.communication) == (8, "semi_structured")
    assert get_topology("independent").team_size == 4
    with pytest.raises(UsageError):
        get_topology("independent", 3)
    with pytest.raises(UsageError):
        get_topology("sequential", 4, "xml")
    with pytest.raises(UsageError):
        get_topology("single", 4)
    with pytest.raises(UsageError):
        get_topology("star")
