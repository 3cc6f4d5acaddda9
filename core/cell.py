"""The --cell grammar (protocol-v1 sections 2.6 and 4).

`task=bfcl,topology=single[,framework=native][,communication=freeform][,team_size=4][,model=qwen]`

Task and framework names come from their tables (core/datasets.py, core/frameworks.py), read at each parse, so a
registration is accepted everywhere at once. The grid itself is core/grid.py; its names are re-exported here for
the callers that know them from this module.
"""

from __future__ import annotations

from core.datasets import dataset_names
from core.errors import CellError
from core.frameworks import NATIVE, framework_names, single_topology_frameworks
from core.grid import (COMMUNICATIONS, MODELS, MULTI_AGENT, TEAM_SIZES, TOPOLOGIES, grid_configurations,
                       grid_tables, on_grid, protocol_tables, registry_key, source_tables)
from core.models import Cell

__all__ = ["CELL_KEYS", "COMMUNICATIONS", "FRAMEWORKS", "MODELS", "MULTI_AGENT", "TASKS", "TEAM_SIZES", "TOPOLOGIES",
           "grid_configurations", "grid_tables", "on_grid", "parse_cell", "protocol_tables", "registry_key",
           "source_tables", "with_framework"]

# the names registered at import (for parametrizing tests); code that must see every registration calls
# core.datasets.dataset_names() / core.frameworks.framework_names()
TASKS = dataset_names()
FRAMEWORKS = framework_names()
CELL_KEYS = ("task", "topology", "framework", "communication", "team_size", "model")


def parse_cell(text: str) -> Cell:
    """Parse the --cell grammar; unknown keys, values or contradictions raise CellError (one line)."""
    fields: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:  # `task=bfcl,topology=single,,,` is a typo, not a cell
            raise CellError(f"empty --cell part in {text.strip()[:120]!r}: remove the stray comma")
        if "=" not in part:
            raise CellError(f"malformed --cell part {part!r}: expected key=value")
        key, value = (s.strip() for s in part.split("=", 1))
        if key not in CELL_KEYS:
            raise CellError(f"unknown --cell key {key!r}; known keys: {', '.join(CELL_KEYS)}")
        if key in fields:
            raise CellError(f"--cell key {key!r} given twice")
        fields[key] = value
    for required in ("task", "topology"):
        if required not in fields:
            raise CellError(f"--cell needs {required}=...")
    task = fields["task"]
    _check(task, dataset_names(), "task")
    topology = _expand_registry_key(fields)
    _check(topology, TOPOLOGIES, "topology")
    framework = fields.get("framework", NATIVE)
    _check(framework, framework_names(), "framework")
    communication = fields.get("communication", "freeform")
    _check(communication, COMMUNICATIONS, "communication")
    model = fields.get("model", "qwen")
    _check(model, MODELS, "model")
    if topology == "single":
        if "team_size" in fields and fields["team_size"] != "1":
            raise CellError(f"topology=single always has team_size 1, got team_size={fields['team_size']}")
        if communication != "freeform":
            raise CellError("topology=single has no communication-format variants (use communication=freeform)")
        team_size = 1
    else:
        raw = fields.get("team_size", "4")
        try:
            team_size = int(raw)
        except ValueError:
            raise CellError(f"team_size must be an integer, got {raw!r}") from None
        if team_size not in TEAM_SIZES:
            raise CellError(f"team_size must be one of {TEAM_SIZES} for {topology}, got {team_size}")
    _check_framework(framework, topology, communication, team_size)
    return Cell(task=task, topology=topology, framework=framework, communication=communication,
                team_size=team_size, task_model=model)


def _registry_refinements(key: str) -> tuple[str, dict[str, str]]:
    """(base topology, implied fields) of a registry key; ("", {}) when `key` is none."""
    for framework, only in single_topology_frameworks().items():
        if key == f"{only}_{framework}":
            return only, {"framework": framework}
    base, sep, fmt = key.partition("_communications_")
    if sep:
        return base, {"communication": fmt}
    base, sep, size = key.rpartition("_r")
    if sep and size.isascii() and size.isdigit():
        return base, {"team_size": size}
    return "", {}


def _expand_registry_key(fields: dict[str, str]) -> str:
    """`topology=` may be a full registry key (section 4): `sequential_crewai`, `centralized_autogen`,
    `decentralized_openai_agents`, `<topology>_communications_<format>`, `<topology>_r<N>`. Its refinements
    fill the other fields; one that contradicts an explicit field is an error."""
    key = fields["topology"]
    if key in TOPOLOGIES:
        return key
    base, implied = _registry_refinements(key)
    if base not in MULTI_AGENT:
        raise CellError(f"unknown topology {key!r}; known: {', '.join(TOPOLOGIES)} or a registry key such as "
                        "sequential_crewai, centralized_communications_structured_soft, decentralized_r8")
    for name, value in implied.items():
        if name in fields and fields[name] != value:
            raise CellError(f"topology={key} means {name}={value}, which conflicts with {name}={fields[name]}")
        fields[name] = value
    return base


def with_framework(text: str, framework: str | None) -> str:
    """The --cell text refined by a --framework option; a different framework in the cell is an error."""
    if framework is None:
        return text
    _check(framework, framework_names(), "framework")
    cell = parse_cell(text)
    named = "framework=" in text.replace(" ", "") or cell.framework != NATIVE
    if named and cell.framework != framework:
        raise CellError(f"--framework {framework} conflicts with framework={cell.framework} in --cell")
    refined = text if named else f"{text},framework={framework}"
    parse_cell(refined)  # the framework must fit the topology (crewai: sequential only, ...)
    return refined


def _check_framework(framework: str, topology: str, communication: str, team_size: int) -> None:
    """crewai / autogen / openai_agents each run one topology, freeform, team size 4 (section 4)."""
    only = single_topology_frameworks().get(framework)
    if only is None:
        return
    if topology != only:
        raise CellError(f"framework={framework} runs only topology={only}, got topology={topology}")
    if communication != "freeform" or team_size != 4:
        raise CellError(f"framework={framework} runs only communication=freeform with team_size=4")


def _check(value: str, allowed: tuple[str, ...], what: str, hint: str = "") -> None:
    if value not in allowed:
        raise CellError(f"unknown {what} {value!r}; known: {', '.join(allowed)}{hint}")
