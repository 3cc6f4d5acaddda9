"""The protocol grid's frozen counts (section 4), filters, and nothing silently dropped."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from core.errors import UsageError
from core.cell import parse_cell
from engine.sweep.grid import protocol_grid
from engine.sweep.plan import Filters, check_filters, custom_jobs, jobs_for, select


@pytest.mark.slow
def test_frozen_counts_of_the_full_grid():
    grid = protocol_grid()
    assert len(grid) == 612 and len(jobs_for(grid, (0, 1, 2), {})) == 1836
    by_model = Counter(c.model for c in grid)
    assert by_model == {"qwen": 558, "llama": 54}
    assert Counter(c.method for c in grid) == {"gepa": 147, "mipro": 147, "mapro": 135, "maspo": 135,
                                               "hivemind": 12, "mamut_gepa": 12, "maspob": 12, "tavo": 12}
    assert len({c.condition_key for c in grid if c.model == "qwen"}) == 132
    assert len({c.condition_key for c in grid}) == 147  # Llama adds its 15 conditions
    assert all(c.team_size == 1 for c in grid if c.topology == "single")
    assert all(c.method in ("gepa", "mipro") for c in grid if c.topology == "single")


@pytest.mark.parametrize("table,configs", [(2, 162), (3, 162), (4, 144), (5, 192), (6, 102), (7, 108)])
def test_each_table_count(table, configs):
    # 2, 3: 9 tasks x (gepa, mipro: 5 topologies + mapro, maspo: 4); 6: 3 tasks x (2 x 5 + 6 x 4)
    # 7: 3 tasks x (2 x 5 + 2 x 4), Qwen and Llama (section 4: "repeated with Llama")
    assert len(select(Filters(tables=(table,)))) == configs


def test_runnable_and_not_implemented_are_both_listed():
    jobs = jobs_for(protocol_grid(), (0, 1, 2), {}, "native")
    runnable = [j for j in jobs if j.runnable]
    missing = [j for j in jobs if not j.runnable]
    assert len(runnable) + len(missing) == 1836
    # table 2's CrewAI/AutoGen/Agents SDK cells, 2 unimplemented methods (hivemind runs on all 4 multi-agent
    # topologies: each honours coalition masks on the native runtime)
    assert len(runnable) == 3 * (612 - 108 - 24)
    assert all(j.reason for j in missing)
    assert {j.method for j in runnable} == {"gepa", "mipro", "mapro", "maspo", "tavo", "hivemind"}
    assert {parse_cell(j.cell).topology for j in runnable if j.method == "hivemind"} == {
        "independent", "sequential", "centralized", "decentralized"}
    assert any("crewai" in (j.reason or "") for j in missing) and any("maspob" in (j.reason or "") for j in missing)
    assert len({j.key for j in jobs}) == 1836  # every job has its own directory
    assert all(parse_cell(j.cell).framework == "native" for j in jobs)


@pytest.mark.slow
def test_framework_runtimes_run_every_implemented_method_of_the_grid():
    jobs = jobs_for(protocol_grid(), (0, 1, 2), {})
    runnable = [j for j in jobs if j.runnable]
    assert len(runnable) == 3 * (612 - 36)  # only the 3 unimplemented methods are left (CI installs every extra)
    assert {parse_cell(j.cell).framework for j in runnable} == {"langgraph", "crewai", "autogen", "openai_agents"}


@pytest.mark.slow
def test_a_missing_extra_keeps_its_jobs_listed_with_the_install_line(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "crewai" else real(name, *a))
    jobs = jobs_for(protocol_grid(), (0,), {})
    crew = [j for j in jobs if parse_cell(j.cell).framework == "crewai"]
    assert crew and not any(j.runnable for j in crew)
    assert all("pip install 'mas-promptbench[crewai]'" in (j.reason or "") for j in crew)
    assert all(j.runnable for j in jobs if parse_cell(j.cell).framework == "autogen" and j.method == "gepa")


def test_filters_narrow_and_identity_runs_once_per_condition():
    f = Filters(tables=(3,), methods=("gepa", "identity"), tasks=("bfcl",), topologies=("single", "independent"),
                seeds=(0, 1, 2))
    chosen = select(check_filters(f))
    jobs = jobs_for(chosen, f.seeds, {})
    assert sorted({(j.method, j.registry_key) for j in jobs}) == [
        ("gepa", "independent"), ("gepa", "single"), ("identity", "independent"), ("identity", "single")]
    assert len(jobs) == 12 and all(j.runnable for j in jobs)
    llama = select(Filters(models=("llama",), methods=("mapro",)))
    assert len(llama) == 12 and all(c.tables == (7,) for c in llama)
    sizes = select(Filters(team_sizes=(8,), tasks=("lcb",)))
    assert len(sizes) == 16 and all(c.registry_key.endswith("_r8") for c in sizes)
    assert len(select(Filters(topologies=("sequential_crewai",)))) == 36
    assert all(c.framework == "crewai" for c in select(Filters(frameworks=("crewai",))))


@pytest.mark.parametrize("bad", [Filters(methods=("gepa2",)), Filters(tasks=("mmlu",)), Filters(tables=(8,)),
                                 Filters(seeds=(3,)), Filters(topologies=("star",)), Filters(models=("gpt",))])
def test_unknown_filter_values_are_usage_errors(bad):
    with pytest.raises(UsageError):
        check_filters(bad)


def test_custom_grid_file(tmp_path):
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({"jobs": [
        {"method": "gepa", "cell": "task=bfcl,topology=single", "seeds": [1]},
        {"method": "gepa", "cell": "task=gpqa,topology=independent,model=llama"},
        {"method": "maspob", "cell": "task=bfcl,topology=independent"}]}))
    jobs = custom_jobs(path, (0, 2), {})
    assert [(j.method, j.seed, j.runnable) for j in jobs] == [
        ("gepa", 1, True), ("gepa", 0, False), ("gepa", 2, False), ("maspob", 0, False), ("maspob", 2, False)]
    assert "off-grid" in (jobs[1].reason or "") and "maspob" in (jobs[3].reason or "")
    path.write_text("{not json")
    with pytest.raises(UsageError, match="grid-file"):
        custom_jobs(path, (0,), {})
