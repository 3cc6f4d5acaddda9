"""The protocol grid (protocol-v1 section 4, tables 2-7) as data.

A *configuration* is (method, task, topology, framework, communication, team size, model); a cell that several
tables contain is one configuration. A *job* is a configuration and an optimizer seed (0, 1, 2). The frozen
counts (612 configurations / 1,836 jobs; Qwen 558, Llama 54; per method GEPA 147 ... TAVO 12; 132 runner
conditions per seed for Qwen; table 7: 108 configurations / 324 jobs, its Qwen half shared with tables 3 and 6)
are asserted in tests/engine/sweep/test_grid.py. The grid is not written here: core/grid.py `source_tables`
defines which tables hold a configuration, `grid_configurations` enumerates it and `registry_key` names it.

Framework labels are the protocol's: table 2 runs single/independent on LangGraph, sequential on CrewAI,
centralized on AutoGen and decentralized on the OpenAI Agents SDK; tables 3-7 are the LangGraph column. This
engine's own runtime (`framework=native`) stands in for the LangGraph column only (core/grid.py `grid_tables`);
table 2's other frameworks and the methods it does not implement are listed as not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.frameworks import protocol_frameworks, single_topology_frameworks
from core.grid import grid_configurations, registry_key
from core.models import Cell

SEEDS = (0, 1, 2)


def framework_keys() -> dict[str, str]:
    """framework -> its registry key, for the frameworks that run one topology (crewai: sequential_crewai, ...)."""
    return {framework: f"{only}_{framework}" for framework, only in single_topology_frameworks().items()}


def framework_labels() -> tuple[str, ...]:
    return protocol_frameworks()


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
    def cell(self) -> Cell:
        return Cell(task=self.task, topology=self.topology, framework=self.framework,
                    communication=self.communication, team_size=self.team_size, task_model=self.model)

    @property
    def registry_key(self) -> str:
        return registry_key(self.cell)

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


def protocol_grid() -> list[Configuration]:
    """Every configuration of tables 2-7, in a stable order, each with the tables that contain it: derived from
    core/grid.py `grid_configurations` (the tables' one definition, `source_tables`, which job.json also uses)."""
    configs = [Configuration(method, c.task, c.topology, c.framework, c.communication, c.team_size, c.task_model,
                             tables) for method, c, tables in grid_configurations()]
    return sorted(configs, key=lambda c: (c.model != "qwen", c.task, c.registry_key, c.method))


def mask_refusal(config: Configuration, runtime: str) -> str | None:
    """Why a method that runs masked coalitions (HiveMind) cannot run this configuration (core/methods.py
    `check_member_masks`, the job's own refusal), or None."""
    from core.errors import UsageError
    from core.methods import check_member_masks
    from topologies.registry import TOPOLOGIES

    framework = "native" if runtime == "native" else config.framework
    try:
        check_member_masks(config.method, framework, config.topology,
                           bool(getattr(TOPOLOGIES.get(config.topology), "member_masks", False)))
    except UsageError as exc:
        return str(exc)
    return None


def not_implemented_reason(config: Configuration, implemented: tuple[str, ...],
                           runtime: str = "frameworks") -> str | None:
    """Why this engine cannot run the configuration here, or None when it can. Runtime `frameworks` runs each
    configuration on its framework (the extra must be installed); `native` runs the LangGraph column on the
    engine's own runtime (claims no table) and cannot run table 2's other frameworks."""
    from engine.runtimes import missing_extra

    reasons = []
    if config.method not in implemented:
        reasons.append(f"method {config.method} is not implemented")
    else:
        masks = mask_refusal(config, runtime)
        if masks:
            reasons.append(masks)
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
