"""SQLite-backed rollout-card streams (events, nodes, edges, annotations, mutations) plus blobs."""

from engine.store.clock import utc_now
from engine.store.store import Committed, Store

__all__ = ["Committed", "Store", "utc_now"]
