"""The protocol grid (protocol-v1 section 4, tables 2-7): the one definition, derived from the three tables.

`source_tables` says which tables hold (method, cell); `grid_configurations` enumerates every (method, cell,
tables) of them: 612 configurations, 1,836 jobs over three seeds. The sweep's grid (engine/sweep/grid.py), the
synthetic results (engine/aggregate/synthetic.py) and job.json (`grid_tables`) all read these functions, so they
cannot disagree. Methods, tasks and frameworks come from their tables (core/methods.py, core/datasets.py,
core/frameworks.py); the cell vocabulary the tables do not own (topologies, communication formats, team sizes,
task models) is here. `registry_key` is a cell's name in section 4's tables (its inverse is in core/cell.py).
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product

from core.datasets import DATASET_TABLE, DatasetSpec, application_tasks, dataset_names
from core.frameworks import (FRAMEWORK_TABLE, NATIVE, FrameworkSpec, grid_column, protocol_frameworks,
                             single_topology_frameworks, table2_framework)
from core.methods import METHOD_TABLE, GridRole, MethodSpec, grid_methods, primary_methods
from core.models import Cell

TOPOLOGIES = ("single", "independent", "sequential", "centralized", "decentralized")
MULTI_AGENT = ("independent", "sequential", "centralized", "decentralized")
COMMUNICATIONS = ("freeform", "semi_structured", "structured_soft")
TEAM_SIZES = (2, 4, 8, 10)
MODELS = ("qwen", "llama")
TABLES = (2, 3, 4, 5, 6, 7)


def registry_key(cell: Cell) -> str:
    """The cell's runtime condition as section 4's tables name it: `sequential_crewai`, `<topology>_communications_
    <format>`, `<topology>_r<N>`, else the topology."""
    if cell.framework in single_topology_frameworks():
        return f"{cell.topology}_{cell.framework}"
    if cell.communication != "freeform":
        return f"{cell.topology}_communications_{cell.communication}"
    if cell.topology != "single" and cell.team_size != 4:
        return f"{cell.topology}_r{cell.team_size}"
    return cell.topology


def method_topologies(method: str) -> tuple[str, ...]:
    """The topologies the grid runs `method` on (section 4: single only for the methods that allow it)."""
    spec = METHOD_TABLE.get(method)
    return TOPOLOGIES if spec is not None and spec.single_agent else MULTI_AGENT


def source_tables(method: str, cell: Cell) -> list[int]:
    """The grid tables (section 4) that contain (method, cell) by the protocol's definition; empty = off-grid.
    The framework decides: table 2 takes its framework per topology (`table2_framework`), tables 3-7 the grid
    column (LangGraph); the engine's own runtime is in none."""
    tables: list[int] = []
    if cell.framework == NATIVE or cell.topology not in method_topologies(method):
        return tables
    primary = method in primary_methods()
    t, top, comm, n, model = cell.task, cell.topology, cell.communication, cell.team_size, cell.task_model
    size4 = n == 4 or top == "single"
    if primary and model == "qwen" and comm == "freeform" and size4 and table2_framework(top) == cell.framework:
        tables.append(2)
    if cell.framework != grid_column():
        return tables
    app = t in application_tasks()
    if primary and model == "qwen" and comm == "freeform" and size4:
        tables.append(3)
    if primary and model == "qwen" and app and top in MULTI_AGENT and n == 4:
        tables.append(4)
    if primary and model == "qwen" and app and top in MULTI_AGENT and comm == "freeform" and n in TEAM_SIZES:
        tables.append(5)
    if method in grid_methods() and model == "qwen" and app and comm == "freeform" and size4:
        tables.append(6)
    if primary and app and comm == "freeform" and size4:
        tables.append(7)
    return sorted(set(tables))


def grid_tables(method: str, cell: Cell, implemented: tuple[str, ...]) -> list[int]:
    """The grid tables this engine can claim for (method, cell); empty = off-grid.

    Only methods the engine implements (`implemented`, from the optimizer registry) feed a table; a BASELINE method
    (`identity`) is in no table's method column but may run on any grid runtime condition (section 4), so it
    claims the tables of the implemented methods that contain the cell. Framework: only the real runtimes claim
    tables; the engine's own runtime (`native`) claims none (see `protocol_tables` for whether its cell is on the
    grid at all).
    """
    searching = tuple(m for m in implemented if m in grid_methods())
    spec = METHOD_TABLE.get(method)
    if spec is not None and spec.grid_role is GridRole.BASELINE:
        return sorted({t for m in searching for t in source_tables(m, cell)})
    if method not in searching:
        return []
    return source_tables(method, cell)


def protocol_tables(method: str, cell: Cell) -> list[int]:
    """The tables (method, cell) would feed on a real runtime: the cell's own framework, or the grid column for
    `native` (whose jobs are on the grid, but claim no table). Empty = off-grid."""
    if cell.framework != NATIVE:
        return source_tables(method, cell)
    return source_tables(method, cell.model_copy(update={"framework": grid_column()}))


def on_grid(method: str, cell: Cell, implemented: tuple[str, ...]) -> bool:
    """Whether (method, cell) is a grid job this engine implements; a `native` cell counts when its LangGraph
    twin is one (it runs, conformance-marked, and claims no table)."""
    if grid_tables(method, cell, implemented):
        return True
    return cell.framework == NATIVE and bool(grid_tables(
        method, cell.model_copy(update={"framework": grid_column()}), implemented))


def protocol_cells() -> list[Cell]:
    """Every well-formed cell on the protocol's framework labels (single: size 1, freeform; a single-topology
    framework: its one topology, freeform, size 4)."""
    cells = []
    only_of = single_topology_frameworks()
    for task, topology, framework, model in product(dataset_names(), TOPOLOGIES, protocol_frameworks(), MODELS):
        only = only_of.get(framework)
        if only not in (None, topology):
            continue
        fixed = topology == "single" or only is not None
        communications = ("freeform",) if fixed else COMMUNICATIONS
        sizes = ((1,) if topology == "single" else (4,)) if fixed else TEAM_SIZES
        for communication, team_size in product(communications, sizes):
            cells.append(Cell(task=task, topology=topology, framework=framework, communication=communication,
                              team_size=team_size, task_model=model))
    return cells


def grid_configurations() -> tuple[tuple[str, Cell, tuple[int, ...]], ...]:
    """Every (method, cell, tables) of section 4's tables 2-7, cells on the protocol's framework labels.

    The one definition of the grid is `source_tables`; this keeps every well-formed cell of every method that it
    places in a table. Table 7 is PRIMARY x application x 5 topologies, LangGraph, freeform, size 4 "repeated with
    Llama": its Qwen half is the same configurations as tables 3 and 6 hold for the application tasks (they carry
    7 too), its Llama half adds 54. Cached per content of the three tables (a registration made later, e.g. by a
    test, gets its own grid).
    """
    return _configurations(tuple(METHOD_TABLE.values()), tuple(DATASET_TABLE.values()),
                           tuple(FRAMEWORK_TABLE.values()))


@lru_cache(maxsize=4)
def _configurations(methods: tuple[MethodSpec, ...], datasets: tuple[DatasetSpec, ...],
                    frameworks: tuple[FrameworkSpec, ...]) -> tuple[tuple[str, Cell, tuple[int, ...]], ...]:
    cells = protocol_cells()
    found = [(method, cell, tuple(source_tables(method, cell))) for method in grid_methods() for cell in cells]
    return tuple(entry for entry in found if entry[2])
