"""Which runtime runs a cell: native topologies, framework runtimes from their extras, one line when missing;
`--framework` and registry keys refine --cell, contradictions are one-line errors (exit 2)."""

from __future__ import annotations

import builtins
import subprocess
import sys
from pathlib import Path

import pytest

from core.cell import parse_cell, with_framework
from core.errors import CellError, UsageError
from engine.runtimes import build_topology, missing_extra, needs_gateway

ROOT = Path(__file__).resolve().parents[2]


def test_native_cells_build_the_engines_topologies():
    topology = build_topology(parse_cell("task=bfcl,topology=sequential"), contract_version=2)
    assert topology.name == "sequential" and not needs_gateway(topology)


@pytest.mark.parametrize("cell,extra,library", [
    ("task=bfcl,topology=single,framework=langgraph", "langgraph", "langgraph"),
    ("task=bfcl,topology=sequential,framework=crewai", "crewai", "crewai"),
    ("task=bfcl,topology=centralized,framework=autogen", "autogen", "autogen_agentchat"),
    ("task=bfcl,topology=decentralized,framework=openai_agents", "agents", "agents"),
])
def test_a_missing_framework_library_names_its_extra(monkeypatch, cell, extra, library):
    for name in list(sys.modules):
        if name == library or name.startswith(f"{library}.") or name.startswith("topologies.frameworks."):
            monkeypatch.delitem(sys.modules, name)
    real_import = builtins.__import__

    def blocked(name, *args, **kwargs):
        if name == library or name.startswith(f"{library}."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", blocked)
    with pytest.raises(UsageError) as err:
        build_topology(parse_cell(cell), contract_version=2)
    assert f"pip install 'mas-promptbench[{extra}]'" in str(err.value) and "\n" not in str(err.value)


def test_missing_extra_is_none_when_installed():
    assert missing_extra("native") is None
    for framework in ("langgraph", "crewai", "autogen", "openai_agents"):
        assert missing_extra(framework) is None  # CI installs every extra


@pytest.mark.parametrize("text,framework,expected", [
    ("task=bfcl,topology=single", "langgraph", "langgraph"),
    ("task=bfcl,topology=single", None, "native"),
    ("task=bfcl,topology=sequential_crewai", "crewai", "crewai"),
    ("task=bfcl,topology=sequential,framework=crewai", None, "crewai"),
])
def test_framework_option_refines_the_cell(text, framework, expected):
    assert parse_cell(with_framework(text, framework)).framework == expected


@pytest.mark.parametrize("text,framework,words", [
    ("task=bfcl,topology=sequential_crewai", "langgraph", "conflicts"),
    ("task=bfcl,topology=single,framework=native", "langgraph", "conflicts"),
    ("task=bfcl,topology=single", "dspy", "unknown framework"),
    ("task=bfcl,topology=single", "crewai", "runs only topology=sequential"),
])
def test_framework_option_contradictions_are_errors(text, framework, words):
    with pytest.raises(CellError, match=words):
        with_framework(text, framework)


@pytest.mark.parametrize("key,fields", [
    ("sequential_crewai", ("sequential", "crewai", "freeform", 4)),
    ("centralized_autogen", ("centralized", "autogen", "freeform", 4)),
    ("decentralized_openai_agents", ("decentralized", "openai_agents", "freeform", 4)),
    ("centralized_communications_structured_soft", ("centralized", "native", "structured_soft", 4)),
    ("decentralized_r8", ("decentralized", "native", "freeform", 8)),
])
def test_registry_keys_are_accepted_as_topology(key, fields):
    cell = parse_cell(f"task=hotpotqa,topology={key}")
    assert (cell.topology, cell.framework, cell.communication, cell.team_size) == fields


@pytest.mark.parametrize("text", ["task=bfcl,topology=decentralized_r8,team_size=4", "task=bfcl,topology=single_r4",
                                  "task=bfcl,topology=independent_crewai", "task=bfcl,topology=sequential_r"])
def test_bad_registry_keys_are_refused(text):
    with pytest.raises(CellError):
        parse_cell(text)


@pytest.mark.slow
def test_cli_framework_conflict_is_one_line_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "engine", "job", "--cell", "task=bfcl,topology=sequential_crewai",
                           "--framework", "autogen", "--method", "identity", "--out", str(tmp_path / "o")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "conflicts" in proc.stderr
    assert not (tmp_path / "o").exists()
