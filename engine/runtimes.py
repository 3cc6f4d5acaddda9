"""Which runtime runs a cell: the engine's own topologies (`native`) or a framework runtime (frameworks/).

A framework runtime lives in an install extra; when it is missing, the job is refused with one line naming the
extra (exit 2) before anything is written.
"""

from __future__ import annotations

import importlib
import importlib.util

from core.errors import UsageError
from core.models import Cell
from core.topology import Topology
from topologies.registry import get_topology

# framework (--cell value) -> (module, install extra, the framework's import names)
RUNTIME_MODULES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "langgraph": ("frameworks.langgraph", "langgraph", ("langgraph", "langchain_core", "langchain_openai")),
    "crewai": ("frameworks.crewai", "crewai", ("crewai",)),
    "autogen": ("frameworks.autogen", "autogen", ("autogen_agentchat", "autogen_core", "autogen_ext")),
    "openai_agents": ("frameworks.agents_sdk", "agents", ("agents",)),
}


def install_hint(framework: str) -> str:
    extra = RUNTIME_MODULES[framework][1]
    return f"pip install 'mas-promptbench[{extra}]'"


def build_topology(cell: Cell, contract_version: int) -> Topology:
    """The topology object that runs `cell` (UsageError when its framework runtime cannot be loaded)."""
    if cell.framework == "native":
        return get_topology(cell.topology, cell.team_size, cell.communication, contract_version=contract_version)
    module_name, extra, imports = RUNTIME_MODULES[cell.framework]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing in imports:
            raise UsageError(f"framework={cell.framework} needs the `{extra}` extra ({missing} is not installed): "
                             f"{install_hint(cell.framework)}") from None
        if exc.name == module_name:
            raise UsageError(f"framework={cell.framework}: this installation has no {module_name}") from None
        raise
    runtimes: dict[str, type] = module.RUNTIMES
    cls = runtimes.get(cell.topology)
    if cls is None:
        raise UsageError(f"framework={cell.framework} has no {cell.topology} runtime "
                         f"(it runs: {', '.join(sorted(runtimes))})")
    topology: Topology = cls(team_size=cell.team_size, communication=cell.communication,
                             contract_version=contract_version)
    return topology


def missing_extra(framework: str) -> str | None:
    """Why `framework`'s runtime cannot load here (its extra is not installed), or None."""
    if framework == "native":
        return None
    _, extra, imports = RUNTIME_MODULES[framework]
    for name in imports:
        if importlib.util.find_spec(name) is None:
            return f"framework {framework} needs the `{extra}` extra ({name} is not installed): {install_hint(framework)}"
    return None


def needs_gateway(topology: object) -> bool:
    return getattr(topology, "framework", "native") != "native"
