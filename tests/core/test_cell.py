import pytest

from core.cell import parse_cell, protocol_tables, registry_key, source_tables
from core.errors import CellError


def test_defaults_and_single_team_size():
    cell = parse_cell("task=bfcl,topology=single")
    assert (cell.framework, cell.communication, cell.team_size, cell.task_model) == ("native", "freeform", 1, "qwen")
    multi = parse_cell("task=hotpotqa,topology=sequential")
    assert multi.team_size == 4 and registry_key(multi) == "sequential"


@pytest.mark.parametrize("text,fragment", [
    ("task=bfcl,topology=single,team_size=4", "team_size 1"),
    ("task=nope,topology=single", "unknown task"),
    ("task=bfcl,topology=ring", "unknown topology"),
    ("task=bfcl", "needs topology"),
    ("task=bfcl,topology=single,foo=1", "unknown --cell key"),
    ("task=bfcl topology=single", "needs topology"),
    ("task=bfcl,topology=independent,team_size=3", "team_size must be one of"),
    ("task=bfcl,topology=independent,framework=dspy", "unknown framework"),
    ("task=bfcl,topology=independent,framework=crewai", "runs only topology=sequential"),
    ("task=bfcl,topology=centralized,framework=autogen,team_size=2", "team_size=4"),
    ("task=bfcl,topology=decentralized,framework=openai_agents,communication=structured_soft", "freeform"),
    ("task=bfcl,topology=single,communication=structured_soft", "no communication-format"),
    ("task=bfcl,task=gpqa,topology=single", "given twice"),
    ("bfcl", "malformed"),
    ("task=bfcl,topology=single,,,", "empty --cell part"),
    (",task=bfcl,topology=single", "stray comma"),
    ("task=bfcl,,topology=single", "empty --cell part"),
    ("", "empty --cell part"),
])
def test_bad_cells_are_refused_with_one_line(text, fragment):
    with pytest.raises(CellError) as err:
        parse_cell(text)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_grid_membership():
    single = parse_cell("task=bfcl,topology=single,framework=langgraph")
    assert source_tables("gepa", single) == [2, 3, 6, 7]  # single / independent run on LangGraph in table 2 too
    assert source_tables("mapro", single) == []  # single only for gepa / mipro
    comm = parse_cell("task=hotpotqa,topology=centralized,framework=langgraph,communication=structured_soft")
    assert source_tables("gepa", comm) == [4] and registry_key(comm) == "centralized_communications_structured_soft"
    size = parse_cell("task=lcb,topology=decentralized,framework=langgraph,team_size=8")
    assert source_tables("mipro", size) == [5] and registry_key(size) == "decentralized_r8"
    assert source_tables("gepa", parse_cell("task=gpqa,topology=sequential,framework=langgraph,team_size=8")) == []


def test_table2_frameworks_claim_table2_only():
    crew = parse_cell("task=gpqa,topology=sequential,framework=crewai")
    assert source_tables("gepa", crew) == [2] and registry_key(crew) == "sequential_crewai"
    auto = parse_cell("task=math,topology=centralized,framework=autogen")
    assert source_tables("maspo", auto) == [2] and registry_key(auto) == "centralized_autogen"
    sdk = parse_cell("task=bfcl,topology=decentralized,framework=openai_agents")
    assert source_tables("mapro", sdk) == [2] and registry_key(sdk) == "decentralized_openai_agents"
    assert source_tables("hivemind", sdk) == []  # table 2 is PRIMARY only
    # LangGraph sequential is the LangGraph column (3-7), not table 2 (which runs sequential on CrewAI)
    assert 2 not in source_tables("gepa", parse_cell("task=bfcl,topology=sequential,framework=langgraph"))


def test_native_runtime_claims_no_table_but_knows_its_grid_cell():
    native = parse_cell("task=bfcl,topology=sequential")
    assert native.framework == "native" and source_tables("gepa", native) == []
    assert protocol_tables("gepa", native) == [3, 4, 5, 6, 7]
    assert protocol_tables("gepa", parse_cell("task=gpqa,topology=sequential,team_size=8")) == []
