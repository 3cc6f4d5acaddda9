"""From the grid to a job list: filters, custom grids from a file, runnable vs not implemented.

Nothing is silently dropped: a selected configuration this engine cannot run is kept in the plan with its reason
(`runnable=False`), counted and printed by `sweep plan`, and never executed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.cell import COMMUNICATIONS, MODELS, TEAM_SIZES, TOPOLOGIES, parse_cell
from core.datasets import dataset_names
from core.errors import CellError, UsageError
from core.grid import TABLES
from core.methods import METHOD_TABLE, GridRole, grid_methods
from engine.sweep.grid import (
    SEEDS,
    Configuration,
    framework_keys,
    framework_labels,
    identity_configurations,
    not_implemented_reason,
    protocol_grid,
)


def implemented_methods() -> tuple[str, ...]:
    from optimizers.registry import implemented

    return implemented()


def method_choices() -> tuple[str, ...]:
    """Every method a filter may name: the grid's (implemented or not) and the baseline (identity)."""
    baseline = tuple(n for n, spec in METHOD_TABLE.items() if spec.grid_role is GridRole.BASELINE)
    return grid_methods() + baseline


@dataclass(frozen=True)
class Filters:
    tables: tuple[int, ...] = ()
    methods: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    topologies: tuple[str, ...] = ()  # base topology or registry key
    frameworks: tuple[str, ...] = ()
    communications: tuple[str, ...] = ()
    team_sizes: tuple[int, ...] = ()
    models: tuple[str, ...] = ()
    seeds: tuple[int, ...] = SEEDS
    runtime: str = "frameworks"  # or "native": the engine's own runtime for the LangGraph column (no table)

    def keeps(self, c: Configuration) -> bool:
        return ((not self.tables or bool(set(self.tables) & set(c.tables)) or (c.method == "identity"))
                and (not self.tasks or c.task in self.tasks)
                and (not self.topologies or c.topology in self.topologies or c.registry_key in self.topologies)
                and (not self.frameworks or c.framework in self.frameworks)
                and (not self.communications or c.communication in self.communications)
                and (not self.team_sizes or c.team_size in self.team_sizes)
                and (not self.models or c.model in self.models))


@dataclass(frozen=True)
class JobSpec:
    """One job of a sweep: everything `python -m engine job` needs, plus where it lives in the sweep dir."""

    method: str
    cell: str
    seed: int
    tables: tuple[int, ...]
    registry_key: str
    runnable: bool
    reason: str | None = None
    allow_any_cell: bool = False
    data_dir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> str:
        """The job's directory relative to the sweep's runs/ (protocol section 6 convention)."""
        cell = parse_cell(self.cell)
        return f"{self.method}/{cell.task}/{self.registry_key}/{cell.task_model}/{self.seed}"

    @property
    def framework(self) -> str:
        """The runtime the job runs on: its cell's framework label, or `native` (the engine's own runtime); a
        table-2 framework configuration listed under `--runtime native` (not runnable there) names the framework
        it needs."""
        framework = parse_cell(self.cell).framework
        if framework == "native":
            return next((f for f, key in framework_keys().items() if key == self.registry_key), framework)
        return framework


def _split(values: tuple[str, ...], allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    for v in values:
        if v not in allowed:
            raise UsageError(f"unknown {what} {v!r}; known: {', '.join(allowed)}")
    return values


def check_filters(f: Filters) -> Filters:
    _split(f.methods, method_choices(), "method")
    _split(f.tasks, dataset_names(), "task")
    _split(f.frameworks, framework_labels(), "framework")
    _split((f.runtime,), ("frameworks", "native"), "runtime")
    _split(f.communications, COMMUNICATIONS, "communication")
    _split(f.models, MODELS, "model")
    keys = {c.registry_key for c in protocol_grid()} | set(TOPOLOGIES)
    _split(f.topologies, tuple(sorted(keys)), "topology")
    for t in f.tables:
        if t not in TABLES:
            raise UsageError(f"unknown table {t}; the grid has tables 2-7")
    for n in f.team_sizes:
        if n not in TEAM_SIZES + (1,):
            raise UsageError(f"unknown team size {n}; known: 1, {', '.join(map(str, TEAM_SIZES))}")
    for s in f.seeds:
        if s not in SEEDS:
            raise UsageError(f"--seeds must be among 0, 1, 2, got {s}")
    return f


def select(f: Filters, configs: list[Configuration] | None = None) -> list[Configuration]:
    """Configurations kept by the filters; `identity` is one per runnable condition of the kept ones."""
    implemented = implemented_methods()
    pool = [c for c in (configs if configs is not None else protocol_grid()) if f.keeps(c)]
    chosen = [c for c in pool if not f.methods or c.method in f.methods]
    if "identity" in f.methods:
        chosen += identity_configurations(pool, implemented, f.runtime)
    return chosen


def jobs_for(configs: list[Configuration], seeds: tuple[int, ...], data_dirs: dict[str, str],
             runtime: str = "frameworks") -> list[JobSpec]:
    implemented = implemented_methods()
    jobs = []
    for c in configs:
        reason = not_implemented_reason(c, implemented, runtime)
        for seed in seeds:
            jobs.append(JobSpec(method=c.method, cell=c.cell_text(runtime), seed=seed, tables=c.tables,
                                registry_key=c.registry_key, runnable=reason is None, reason=reason,
                                data_dir=data_dirs.get(c.task)))
    return jobs


def custom_jobs(path: Path, seeds: tuple[int, ...], data_dirs: dict[str, str]) -> list[JobSpec]:
    """A custom grid: JSON {"jobs": [{"method": M, "cell": "task=..,topology=..", "seeds": [..]?,
    "allow_any_cell": bool?, "data_dir": DIR?}, ...]}. Off-grid cells are runnable only with allow_any_cell."""
    from core.cell import grid_tables, on_grid, registry_key

    entries = _grid_entries(path)
    implemented, jobs = implemented_methods(), []
    for i, e in enumerate(entries):
        try:
            method, cell = _entry_text(e, "method"), parse_cell(_entry_text(e, "cell"))
            entry_seeds = tuple(_seed(s) for s in e.get("seeds", seeds))
            allow = e.get("allow_any_cell", False)
            if not isinstance(allow, bool):
                raise TypeError("allow_any_cell must be true or false")
            data_dir = _data_dir(e.get("data_dir"))
        except (KeyError, TypeError, ValueError, CellError) as exc:
            raise UsageError(f"--grid-file {path}: entry {i}: {exc}") from None
        tables = tuple(grid_tables(method, cell, implemented))
        reason = None if method in implemented else f"method {method} is not implemented"
        if reason is None and not on_grid(method, cell, implemented) and not allow:
            reason = "off-grid cell (set allow_any_cell to run it, non-conformant)"
        for seed in entry_seeds:
            jobs.append(JobSpec(method=method, cell=str(e["cell"]), seed=seed, tables=tables,
                                registry_key=registry_key(cell), runnable=reason is None, reason=reason,
                                allow_any_cell=allow, data_dir=data_dir or data_dirs.get(cell.task)))
    return jobs


GRID_KEYS = ("jobs",)
ENTRY_KEYS = ("method", "cell", "seeds", "allow_any_cell", "data_dir")


def _grid_entries(path: Path) -> list[dict[str, Any]]:
    """The entries of a grid file, every key known (a misspelt `seed` or `allow_any_cel` is an error, not a
    silently ignored field)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
            raise TypeError('expected {"jobs": [...]}')
    except (OSError, ValueError, TypeError, RecursionError) as exc:
        raise UsageError(f"--grid-file {path}: not a readable grid ({type(exc).__name__}: {exc})") from None
    unknown = sorted(set(doc) - set(GRID_KEYS))
    if unknown:
        raise UsageError(f"--grid-file {path}: unknown field {unknown[0]!r} (known: {', '.join(GRID_KEYS)})")
    for i, e in enumerate(doc["jobs"]):
        if not isinstance(e, dict):
            raise UsageError(f"--grid-file {path}: entry {i}: not an object")
        bad = sorted(set(e) - set(ENTRY_KEYS))
        if bad:
            raise UsageError(f"--grid-file {path}: entry {i}: unknown field {bad[0]!r} (known: "
                             f"{', '.join(ENTRY_KEYS)})")
    return list(doc["jobs"])


def _entry_text(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise TypeError(f"{key} must be a non-empty string")
    return value


def _seed(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value not in SEEDS:
        raise ValueError("seeds must be among 0, 1, 2")
    return value


def _data_dir(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise TypeError("data_dir must be a directory path")
    return check_data_dir(value)


def check_data_dir(value: str) -> str:
    """A data directory that exists, found before any job runs (was: only when the job loaded its data)."""
    if not Path(value).is_dir():
        raise ValueError(f"data_dir {value} is not a directory")
    return value
