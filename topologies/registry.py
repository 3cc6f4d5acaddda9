"""Topologies register by name; `get_topology(name, team_size, communication)` builds one for a cell."""

from __future__ import annotations

from core.communication import FORMATS
from core.errors import UsageError
from core.topology import Topology
from topologies.centralized import Centralized
from topologies.decentralized import Decentralized
from topologies.independent import Independent
from topologies.sequential import Sequential
from topologies.single import Single

TOPOLOGIES: dict[str, type] = {
    "single": Single,
    "independent": Independent,
    "sequential": Sequential,
    "centralized": Centralized,
    "decentralized": Decentralized,
}
MULTI_AGENT_DEFAULT_SIZE = 4


def get_topology(name: str, team_size: int | None = None, communication: str = "freeform",
                 contract_version: int = 1) -> Topology:
    """The topology `name` for a team size (None = the topology's default: 1 for single, 4 otherwise) and a
    communication format. Single accepts only team size 1 and freeform. `contract_version`: 1 for baseline runs,
    2 for jobs (core.contracts)."""
    try:
        cls = TOPOLOGIES[name]
    except KeyError:
        raise UsageError(f"topology {name!r} is not implemented; implemented: {', '.join(TOPOLOGIES)}") from None
    if communication not in FORMATS:
        raise UsageError(f"unknown communication format {communication!r}; known: {', '.join(FORMATS)}")
    if cls is Single:
        if team_size not in (None, 1) or communication != "freeform":
            raise UsageError("topology single runs one agent with the freeform format (team_size 1)")
        return Single(contract_version=contract_version)
    topology: Topology = cls(team_size=MULTI_AGENT_DEFAULT_SIZE if team_size is None else team_size,
                             communication=communication, contract_version=contract_version)
    return topology
