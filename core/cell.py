"""The --cell grammar and the protocol grid (protocol-v1 sections 2.6 and 4).

`task=bfcl,topology=single[,framework=native][,communication=freeform][,team_size=4][,model=qwen]`
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product

from core.errors import CellError
from core.models import Cell

TASKS = ("gpqa", "hotpotqa", "math", "lcb", "apps", "swe", "bfcl", "apibank", "toolhop")
APPLICATION_TASKS = ("hotpotqa", "lcb", "bfcl")
TOPOLOGIES = ("single", "independent", "sequential", "centralized", "decentralized")
MULTI_AGENT = ("independent", "sequential", "centralized", "decentralized")
COMMUNICATIONS = ("freeform", "semi_structured", "structured_soft")
TEAM_SIZES = (2, 4, 8, 10)
# `native`: this project's own anyio runtime (claims no grid table); the others are the real framework runtimes
# (frameworks/, each an install extra) recorded through the engine's gateway
FRAMEWORKS = ("native", "langgraph", "crewai", "autogen", "openai_agents")
# table 2's framework per topology (section 4); crewai / autogen / openai_agents run only that topology
TABLE2_FRAMEWORK = {"single": "langgraph", "independent": "langgraph", "sequential": "crewai",
                    "centralized": "autogen", "decentralized": "openai_agents"}
SINGLE_TOPOLOGY_FRAMEWORKS = {"crewai": "sequential", "autogen": "centralized", "openai_agents": "decentralized"}
PROTOCOL_FRAMEWORKS = FRAMEWORKS[1:]  # the frameworks section 4's tables name
MODELS = ("qwen", "llama")
PRIMARY_METHODS = ("gepa", "mipro", "mapro", "maspo")
ALL_METHODS = PRIMARY_METHODS + ("hivemind", "mamut_gepa", "maspob", "tavo")
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
    _check(task, TASKS, "task")
    topology = _expand_registry_key(fields)
    _check(topology, TOPOLOGIES, "topology")
    framework = fields.get("framework", "native")
    _check(framework, FRAMEWORKS, "framework")
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
    for framework, only in SINGLE_TOPOLOGY_FRAMEWORKS.items():
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
    _check(framework, FRAMEWORKS, "framework")
    cell = parse_cell(text)
    named = "framework=" in text.replace(" ", "") or cell.framework != "native"
    if named and cell.framework != framework:
        raise CellError(f"--framework {framework} conflicts with framework={cell.framework} in --cell")
    refined = text if named else f"{text},framework={framework}"
    parse_cell(refined)  # the framework must fit the topology (crewai: sequential only, ...)
    return refined


def _check_framework(framework: str, topology: str, communication: str, team_size: int) -> None:
    """crewai / autogen / openai_agents each run one topology, freeform, team size 4 (section 4)."""
    only = SINGLE_TOPOLOGY_FRAMEWORKS.get(framework)
    if only is None:
        return
    if topology != only:
        raise CellError(f"framework={framework} runs only topology={only}, got topology={topology}")
    if communication != "freeform" or team_size != 4:
        raise CellError(f"framework={framework} runs only communication=freeform with team_size=4")


def _check(value: str, allowed: tuple[str, ...], what: str, hint: str = "") -> None:
    if value not in allowed:
        raise CellError(f"unknown {what} {value!r}; known: {', '.join(allowed)}{hint}")


def registry_key(cell: Cell) -> str:
    if cell.framework in SINGLE_TOPOLOGY_FRAMEWORKS:
        return f"{cell.topology}_{cell.framework}"
    if cell.communication != "freeform":
        return f"{cell.topology}_communications_{cell.communication}"
    if cell.topology != "single" and cell.team_size != 4:
        return f"{cell.topology}_r{cell.team_size}"
    return cell.topology


def grid_tables(method: str, cell: Cell, implemented: tuple[str, ...]) -> list[int]:
    """The grid tables this engine can claim for (method, cell); empty = off-grid.

    Only methods the engine implements (`implemented`, from the optimizer registry) feed a table; `identity` is in
    no table's method column but may run on any grid runtime condition (section 4), so it claims the tables of the
    implemented methods that contain the cell. Framework: only the real runtimes claim tables (table 2 for the
    framework section 4 names per topology, tables 3-7 for LangGraph); the engine's own runtime (`native`)
    claims none (see `protocol_tables` for whether its cell is on the grid at all).
    """
    searching = tuple(m for m in implemented if m in ALL_METHODS)
    if method == "identity":
        return sorted({t for m in searching for t in source_tables(m, cell)})
    if method not in searching:
        return []
    return source_tables(method, cell)


def protocol_tables(method: str, cell: Cell) -> list[int]:
    """The tables (method, cell) would feed on a real runtime: the cell's own framework, or LangGraph for `native`
    (whose jobs are on the grid, but claim no table). Empty = off-grid."""
    if cell.framework != "native":
        return source_tables(method, cell)
    return source_tables(method, cell.model_copy(update={"framework": "langgraph"}))


def on_grid(method: str, cell: Cell, implemented: tuple[str, ...]) -> bool:
    """Whether (method, cell) is a grid job this engine implements; a `native` cell counts when its LangGraph
    twin is one (it runs, conformance-marked, and claims no table)."""
    if grid_tables(method, cell, implemented):
        return True
    return cell.framework == "native" and bool(grid_tables(method, cell.model_copy(update={"framework": "langgraph"}),
                                                           implemented))


def source_tables(method: str, cell: Cell) -> list[int]:
    """The grid tables (section 4) that contain (method, cell) by the protocol's definition; empty = off-grid.
    The framework decides: table 2 takes its framework per topology (TABLE2_FRAMEWORK), tables 3-7 LangGraph;
    the engine's own runtime is in none."""
    tables: list[int] = []
    if cell.framework == "native" or (cell.topology == "single" and method not in ("gepa", "mipro")):
        return tables
    if (method in PRIMARY_METHODS and cell.task_model == "qwen" and cell.communication == "freeform"
            and (cell.team_size == 4 or cell.topology == "single")
            and TABLE2_FRAMEWORK[cell.topology] == cell.framework):
        tables.append(2)
    if cell.framework != "langgraph":
        return tables
    t, top, comm, n, model = cell.task, cell.topology, cell.communication, cell.team_size, cell.task_model
    single_ok = top != "single" or method in ("gepa", "mipro")
    if not single_ok:
        return tables
    primary = method in PRIMARY_METHODS
    app = t in APPLICATION_TASKS
    size4 = n == 4 or top == "single"
    if primary and model == "qwen" and comm == "freeform" and size4:
        tables.append(3)
    if primary and model == "qwen" and app and top in MULTI_AGENT and n == 4:
        tables.append(4)
    if primary and model == "qwen" and app and top in MULTI_AGENT and comm == "freeform" and n in TEAM_SIZES:
        tables.append(5)
    if method in ALL_METHODS and model == "qwen" and app and comm == "freeform" and size4:
        tables.append(6)
    if primary and app and comm == "freeform" and size4:
        tables.append(7)
    return sorted(set(tables))


def _protocol_cells() -> list[Cell]:
    """Every well-formed cell on the protocol's framework labels (single: size 1, freeform; crewai, autogen,
    openai_agents: their one topology, freeform, size 4)."""
    cells = []
    for task, topology, framework, model in product(TASKS, TOPOLOGIES, PROTOCOL_FRAMEWORKS, MODELS):
        only = SINGLE_TOPOLOGY_FRAMEWORKS.get(framework)
        if only not in (None, topology):
            continue
        fixed = topology == "single" or only is not None
        communications = ("freeform",) if fixed else COMMUNICATIONS
        sizes = ((1,) if topology == "single" else (4,)) if fixed else TEAM_SIZES
        for communication, team_size in product(communications, sizes):
            cells.append(Cell(task=task, topology=topology, framework=framework, communication=communication,
                              team_size=team_size, task_model=model))
    return cells


@lru_cache(maxsize=1)
def grid_configurations() -> tuple[tuple[str, Cell, tuple[int, ...]], ...]:
    """Every (method, cell, tables) of section 4's tables 2-7, cells on the protocol's framework labels.

    The one definition of the grid is `source_tables`; this keeps every well-formed cell of every method that it
    places in a table, so the sweep's grid, the synthetic results and job.json cannot disagree. Table 7 is PRIMARY
    x application x 5 topologies, LangGraph, freeform, size 4 "repeated with Llama": its Qwen half is the same
    configurations as tables 3 and 6 hold for the application tasks (they carry 7 too), its Llama half adds 54.
    """
    cells = _protocol_cells()
    found = [(method, cell, tuple(source_tables(method, cell))) for method in ALL_METHODS for cell in cells]
    return tuple(entry for entry in found if entry[2])
