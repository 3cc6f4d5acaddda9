"""GEPA (`gepa`), protocol-v1 section 8.1, implemented natively on the engine's async, ledger-bound runner.

Why not the `gepa` PyPI library (checked: gepa 0.1.4, `GEPAAdapter` / `GEPAEngine`):
- Its engine and adapter contract are synchronous (`evaluate(batch, candidate) -> EvaluationBatch`, a sync
  reflection-LM callable); async support is still open upstream (gepa-ai/gepa#61, #122, PR #278). Running it on our
  anyio runner means a worker thread that blocks on `from_thread.run` for every batch and every reflection call.
- It has no notion of a budget-exhausted row: a validation evaluation trimmed at the cap would enter the Pareto
  pool as genuine zeros (and could be selected or mis-reported); the stop check (`MaxMetricCallsStopper`) runs only
  between iterations, so the library itself relies on overshoot that our ledger forbids.
- `evaluate` is not told the iteration, but our request seeds must be keyed per iteration (section 5.5); that
  would need a callback side channel into the adapter.
- Its one shared `random.Random` is not in its resume pickle (anchors A.2), and resume re-evaluates the seed
  (gepa#453); our resume replays the whole search from the store instead, which needs every decision to be a pure
  function of the seed and the replayed results, including merges and the epoch sampler.
The algorithm (Pareto parent sampling, epoch-shuffled minibatches, round-robin components, skip on perfect
minibatches, strict minibatch acceptance, merge on common ancestors screened on 5 validation rows) is ported from
the library's source, see optimizers/gepa/pareto.py.
"""

from optimizers.gepa.method import Gepa

__all__ = ["Gepa"]
