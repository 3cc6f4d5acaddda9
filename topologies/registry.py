"""Topologies register by name."""

from __future__ import annotations

from core.errors import UsageError
from core.topology import Topology
from topologies.single import Single

TOPOLOGIES: dict[str, type] = {"single": Single}


def get_topology(name: str) -> Topology:
    try:
        return TOPOLOGIES[name]()
    except KeyError:
        raise UsageError(f"topology {name!r} is not implemented yet; implemented: {', '.join(TOPOLOGIES)}") from None
