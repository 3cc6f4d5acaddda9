"""The protocol grid (protocol-v1 section 4, tables 2-7) as data.

A *configuration* is (method, task, topology, framework, communication, team size, model); a cell that several
tables contain is one configuration. A *job* is a configuration and an optimizer seed (0, 1, 2). The frozen
counts (612 configurations / 1,836 jobs; Qwen 558, Llama 54; per method GEPA 147 ... TAVO 12; 132 runner
conditions per seed for Qwen) are asserted in tests/engine/sweep/test_grid.py.

Framework labels are the protocol's: table 2 runs single/independent on LangGraph, sequential on CrewAI,
centralized on AutoGen and decentralized on the OpenAI Agents SDK; tables 3-7 are the LangGraph column. This
engine's own runtime (`framework=native`) stands in for the LangGraph column only (core/cell.py `grid_tables`);
table 2's other frameworks and the methods it does not implement are listed as not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.cell import (
    ALL_METHODS,
    APPLICATION_TASKS,
    COMMUNICATIONS,
    MULTI_AGENT,
    PRIMARY_METHODS,
    TASKS,
    TEAM_SIZES,
    TOPOLOGIES,
)

SEEDS = (0, 1, 2)
TABLE2_FRAMEWORK = {"single": "langgraph", "independent": "langgraph", "sequential": "crewai",
                    "centralized": "autogen", "decentralized": "openai_agents"}
FRAMEWORK_KEYS = {"crewai": "sequential_crewai", "autogen": "centralized_autogen",
                  "openai_agents": "decentralized_openai_agents"}
FRAMEWORK_LABELS = ("langgraph", "crewai", "autogen", "openai_agents")


@dataclass(frozen=True, order=True)
class Configuration:
    method: str
    task: str
    topology: str
    framework: str  # protocol label: langgraph | crewai | autogen | openai_agents
    communication: str
    team_size: int
    model: str
    tables: tuple[int, ...] = ()

    @property
    def registry_key(self) -> str:
        if self.framework != "langgraph":
            return FRAMEWORK_KEYS[self.framework]
        if self.communication != "freeform":
            return f"{self.topology}_communications_{self.communication}"
        if self.topology != "single" and self.team_size != 4:
            return f"{self.topology}_r{self.team_size}"
        return self.topology

    @property
    def condition_key(self) -> tuple[str, str, str, int, str, str]:
        """The method-independent runner condition (task, runtime, model)."""
        return (self.task, self.topology, self.communication, self.team_size, self.model, self.framework)

    def cell_text(self, runtime: str = "frameworks") -> str:
        """The engine's --cell text: on the configuration's framework runtime, or (runtime `native`) on the
        engine's own runtime, which claims no table."""
        text = f"task={self.task},topology={self.topology},model={self.model}"
        if runtime == "frameworks":
            text += f",framework={self.framework}"
        if self.topology != "single":
            text += f",communication={self.communication},team_size={self.team_size}"
        return text


def _add(grid: dict[tuple[object, ...], set[int]], table: int, method: str, task: str, topology: str,
         framework: str, communication: str = "freeform", team_size: int = 4, model: str = "qwen") -> None:
    if topology == "single":
        if method not in ("gepa", "mipro"):
            return  # single is allowed only for gepa and mipro
        team_size = 1
    grid.setdefault((method, task, topology, framework, communication, team_size, model), set()).add(table)


def protocol_grid() -> list[Configuration]:
    """Every configuration of tables 2-7, in a stable order, each with the tables that contain it."""
    grid: dict[tuple[object, ...], set[int]] = {}
    for m in PRIMARY_METHODS:
        for t in TASKS:
            for top in TOPOLOGIES:
                _add(grid, 2, m, t, top, TABLE2_FRAMEWORK[top])
                _add(grid, 3, m, t, top, "langgraph")
        for t in APPLICATION_TASKS:
            for top in MULTI_AGENT:
                for comm in COMMUNICATIONS:
                    _add(grid, 4, m, t, top, "langgraph", communication=comm)
                for n in TEAM_SIZES:
                    _add(grid, 5, m, t, top, "langgraph", team_size=n)
            for top in TOPOLOGIES:
                _add(grid, 7, m, t, top, "langgraph", model="llama")
    for m in ALL_METHODS:
        for t in APPLICATION_TASKS:
            for top in TOPOLOGIES:
                _add(grid, 6, m, t, top, "langgraph")
    configs = [Configuration(str(k[0]), str(k[1]), str(k[2]), str(k[3]), str(k[4]), int(str(k[5])), str(k[6]),
                             tuple(sorted(v))) for k, v in grid.items()]
    return sorted(configs, key=lambda c: (c.model != "qwen", c.task, c.registry_key, c.method))


def not_implemented_reason(config: Configuration, implemented: tuple[str, ...],
                           runtime: str = "frameworks") -> str | None:
    """Why this engine cannot run the configuration here, or None when it can. Runtime `frameworks` runs each
    configuration on its framework (the extra must be installed); `native` runs the LangGraph column on the
    engine's own runtime (claims no table) and cannot run table 2's other frameworks."""
    from engine.runtimes import missing_extra

    reasons = []
    if config.method not in implemented:
        reasons.append(f"method {config.method} is not implemented")
    if runtime == "native" and config.framework != "langgraph":
        reasons.append(f"framework {config.framework} (table 2) runs only with --runtime frameworks")
    elif runtime == "frameworks":
        missing = missing_extra(config.framework)
        if missing:
            reasons.append(missing)
    return "; ".join(reasons) or None


def identity_configurations(configs: list[Configuration], implemented: tuple[str, ...],
                            runtime: str = "frameworks") -> list[Configuration]:
    """`identity` (protocol section 4: any grid runtime condition) once per distinct runnable condition."""
    seen: dict[tuple[str, str, str, int, str, str], Configuration] = {}
    for c in configs:
        if not_implemented_reason(c, implemented, runtime) is None and c.condition_key not in seen:
            seen[c.condition_key] = Configuration("identity", c.task, c.topology, c.framework, c.communication,
                                                  c.team_size, c.model, ())
    tables: dict[tuple[str, str, str, int, str, str], set[int]] = {}
    for c in configs:
        if c.condition_key in seen and not_implemented_reason(c, implemented, runtime) is None:
            tables.setdefault(c.condition_key, set()).update(c.tables)
    return [Configuration(**{**c.__dict__, "tables": tuple(sorted(tables[k]))}) for k, c in seen.items()]
