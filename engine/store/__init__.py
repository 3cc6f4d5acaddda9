"""SQLite-backed rollout-card streams (events, nodes, edges, annotations, mutations) plus blobs."""

from engine.store.store import Committed, Store, utc_now

__all__ = ["Committed", "Store", "utc_now"]
