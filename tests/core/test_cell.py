import pytest

from core.cell import parse_cell, registry_key, source_tables
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
    ("task=bfcl,topology=independent,framework=langgraph", "unknown framework"),
    ("task=bfcl,topology=single,communication=structured_soft", "no communication-format"),
    ("task=bfcl,task=gpqa,topology=single", "given twice"),
    ("bfcl", "malformed"),
])
def test_bad_cells_are_refused_with_one_line(text, fragment):
    with pytest.raises(CellError) as err:
        parse_cell(text)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_grid_membership():
    single = parse_cell("task=bfcl,topology=single")
    assert source_tables("gepa", single) == [3, 6, 7]
    assert source_tables("mapro", single) == []  # single only for gepa / mipro
    comm = parse_cell("task=hotpotqa,topology=centralized,communication=structured_soft")
    assert source_tables("gepa", comm) == [4] and registry_key(comm) == "centralized_communications_structured_soft"
    size = parse_cell("task=lcb,topology=decentralized,team_size=8")
    assert source_tables("mipro", size) == [5] and registry_key(size) == "decentralized_r8"
    assert source_tables("gepa", parse_cell("task=gpqa,topology=sequential,team_size=8")) == []
