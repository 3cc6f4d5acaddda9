"""Which runtime runs a cell: the engine's own topologies (`native`) or a framework runtime (topologies/frameworks/).

A framework runtime lives in an install extra; when it is missing, the job is refused with one line naming the
extra (exit 2) before anything is written. Modules, extras and import names are the framework table's
(core/frameworks.py), the one registration of a framework.
"""

from __future__ import annotations

import importlib
import importlib.util

from core.errors import UsageError
from core.frameworks import FRAMEWORK_TABLE, NATIVE, FrameworkSpec
from core.models import Cell
from core.topology import Topology
from topologies.registry import get_topology


def _runtime(framework: str) -> tuple[FrameworkSpec, str, str]:
    """(spec, module, extra) of a framework runtime (not `native`)."""
    spec = FRAMEWORK_TABLE[framework]
    if spec.module is None or spec.extra is None:
        raise UsageError(f"framework={framework} names no runtime module")
    return spec, spec.module, spec.extra


def install_hint(framework: str) -> str:
    return FRAMEWORK_TABLE[framework].install_hint


def build_topology(cell: Cell, contract_version: int) -> Topology:
    """The topology object that runs `cell` (UsageError when its framework runtime cannot be loaded)."""
    if cell.framework == NATIVE:
        return get_topology(cell.topology, cell.team_size, cell.communication, contract_version=contract_version)
    spec, module_name, extra = _runtime(cell.framework)
    imports = spec.imports
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
    if framework == NATIVE:
        return None
    spec, _, extra = _runtime(framework)
    for name in spec.imports:
        if importlib.util.find_spec(name) is None:
            return f"framework {framework} needs the `{extra}` extra ({name} is not installed): {install_hint(framework)}"
    return None


def needs_gateway(topology: object) -> bool:
    return getattr(topology, "framework", NATIVE) != NATIVE
