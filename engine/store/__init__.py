"""SQLite-backed rollout-card streams (events, nodes, edges, annotations, mutations) plus blobs."""

from engine.store.store import Store, utc_now

__all__ = ["Store", "utc_now"]
