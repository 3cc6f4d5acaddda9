"""The job's long-lived heap kept out of the cyclic garbage collector's passes while the phases run.

By the time a job's phases start, the process holds a large heap that lives as long as the job: imported modules,
the benchmark's rows and tool data (the bfcl-eval package data alone is tens of thousands of objects), pydantic
schemas, the topology and seed bundles. Every full (generation 2) collection walks all of it, and a job allocates
fast enough (several dicts per recorded model call) to trigger collections all the time: on the 600-rollout
MAPRO benchmark (bench/optimizer.py, BFCL) the collector took ~13% of the optimize phase's CPU (0.36-0.41 s of
2.8 s), much of it in the few full passes over that heap; frozen, 0.23-0.25 s. `gc.freeze()` moves everything
alive at that point to the permanent generation (CPython's documented remedy for a large long-lived heap), so the
passes during the phases only see what the phases allocate; `gc.unfreeze()` hands it back when the block ends.
Nothing is freed or kept differently: reference counting is unaffected, and cyclic garbage frozen by accident is
collected after the block.

The block also raises the youngest generation's threshold from CPython's 700 to `YOUNG_THRESHOLD` allocations: a
recorded call allocates a few hundred containers (request, response, record payload), so at 700 the collector ran
a young pass every call or two (about 360 of them in the MAPRO benchmark's job, 0.26 s); at 10,000, 17 passes and
0.05-0.08 s, the optimize phase at 1.23-1.28x its measured endpoint floor instead of 1.29-1.30x, peak RSS unchanged
(102 MB). What waits longer is only cyclic garbage (reference counting frees the rest at once), at most that many
young objects.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


YOUNG_THRESHOLD = 10_000


@contextmanager
def long_lived_heap_frozen() -> Iterator[None]:
    """Freeze the objects alive now and raise the young generation's threshold for the duration of the block
    (process-wide; nesting and concurrent jobs in one process are harmless: a freeze only moves objects, an
    unfreeze moves them all back, and the thresholds in force before the block are restored)."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
