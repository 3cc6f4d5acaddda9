"""The job's long-lived heap kept out of the cyclic garbage collector's passes while the phases run.

By the time a job's phases start, the process holds a large heap that lives as long as the job: imported modules,
the benchmark's rows and tool data (the bfcl-eval package data alone is tens of thousands of objects), pydantic
schemas, the topology and seed bundles. Every full (generation 2) collection walks all of it, and a job allocates
fast enough (several dicts per recorded model call) to trigger collections all the time: on the 600-rollout
MAPRO benchmark (bench/optimizer.py, BFCL) the collector took ~13% of the optimize phase's CPU (0.36-0.41 s of
2.8 s), much of it in the few full passes over that heap; frozen, 0.23-0.25 s. `gc.freeze()` moves everything alive at that point to the permanent
generation (CPython's documented remedy for a large long-lived heap), so the passes during the phases only see what
the phases allocate; `gc.unfreeze()` hands it back when the block ends. Nothing is freed or kept differently:
reference counting is unaffected, and cyclic garbage frozen by accident is collected after the block.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def long_lived_heap_frozen() -> Iterator[None]:
    """Freeze the objects alive now for the duration of the block (process-wide; nesting and concurrent jobs in
    one process are harmless: a freeze only moves objects, an unfreeze moves them all back)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
