"""The framework table: one entry per runtime a cell can name with `framework=`; every list of frameworks (the
--cell grammar and its registry keys, the grid's framework column, the runtime implementation ids of section 5.6,
engine/runtimes.py's modules, extras and install hints, the CLI help) is derived from it.

Adding a framework runtime is its module (a `RUNTIMES` dict topology -> class, behind an install extra) plus ONE
`FrameworkSpec` in `FRAMEWORK_TABLE`. `native` is the engine's own anyio runtime (topologies/): no module, no
extra, no table of its own (it stands in for the LangGraph column, core/grid.py). Data in core, like the method
and dataset tables, because the cell grammar and the condition ids (core/protocol.py) need it.
"""

from __future__ import annotations

from dataclasses import dataclass

NATIVE = "native"


@dataclass(frozen=True)
class FrameworkSpec:
    """`module` is imported only when a cell needs it (engine/runtimes.py); `imports` are the framework's own
    top-level packages, whose absence means the `extra` is not installed. `table2_topologies`: the topologies
    section 4's table 2 runs on this framework; `grid_column`: the framework of tables 3-7; `only_topology`: the
    one topology it runs (then only freeform, team size 4, registry key `<topology>_<name>`)."""

    name: str
    runtime_implementation_id: str
    module: str | None = None
    extra: str | None = None
    imports: tuple[str, ...] = ()
    table2_topologies: tuple[str, ...] = ()
    grid_column: bool = False
    only_topology: str | None = None
    member_masks: bool = False  # honours coalition masks (core/coalition.py); HiveMind needs it

    @property
    def install_hint(self) -> str:
        return f"pip install 'mas-promptbench[{self.extra}]'" if self.extra else ""


_SPECS = (
    FrameworkSpec(NATIVE, "mas-promptbench-engine/anyio-native-v1", member_masks=True),
    FrameworkSpec("langgraph", "mas-promptbench-engine/langgraph-gateway-v1", "topologies.frameworks.langgraph", "langgraph",
                  ("langgraph", "langchain_core", "langchain_openai"), table2_topologies=("single", "independent"),
                  grid_column=True),
    FrameworkSpec("crewai", "mas-promptbench-engine/crewai-gateway-v1", "topologies.frameworks.crewai", "crewai", ("crewai",),
                  table2_topologies=("sequential",), only_topology="sequential"),
    FrameworkSpec("autogen", "mas-promptbench-engine/autogen-gateway-v1", "topologies.frameworks.autogen", "autogen",
                  ("autogen_agentchat", "autogen_core", "autogen_ext"), table2_topologies=("centralized",),
                  only_topology="centralized"),
    FrameworkSpec("openai_agents", "mas-promptbench-engine/openai-agents-sdk-gateway-v1", "topologies.frameworks.agents_sdk",
                  "agents", ("agents",), table2_topologies=("decentralized",), only_topology="decentralized"),
)
# THE registration: name -> spec (`native` first, then the protocol's framework labels)
FRAMEWORK_TABLE: dict[str, FrameworkSpec] = {spec.name: spec for spec in _SPECS}


def framework_names() -> tuple[str, ...]:
    return tuple(FRAMEWORK_TABLE)


def protocol_frameworks() -> tuple[str, ...]:
    """The framework labels section 4's tables name (every framework but the engine's own runtime)."""
    return tuple(name for name in FRAMEWORK_TABLE if name != NATIVE)


def grid_column() -> str:
    """The framework of tables 3-7 (LangGraph)."""
    return next(name for name, spec in FRAMEWORK_TABLE.items() if spec.grid_column)


def table2_framework(topology: str) -> str | None:
    return next((name for name, spec in FRAMEWORK_TABLE.items() if topology in spec.table2_topologies), None)


def single_topology_frameworks() -> dict[str, str]:
    """framework -> the one topology it runs (crewai: sequential, ...)."""
    return {name: spec.only_topology for name, spec in FRAMEWORK_TABLE.items() if spec.only_topology}


def honours_member_masks(framework: str) -> bool:
    spec = FRAMEWORK_TABLE.get(framework)
    return spec is not None and spec.member_masks


def frameworks_help() -> str:
    return ", ".join(f"{name} (default)" if name == NATIVE else name for name in FRAMEWORK_TABLE)
