"""MAPRO (`mapro`), protocol-v1 section 8.3, native on the engine's async, ledger-bound runner.

    roles.py        role graph (chain / star proxy / shared prompt), transcripts, judge reply parsing
    map_solver.py   exact max-product MAP by variable elimination (+ brute force for tests)
    prompts.py      rewrite (with preference pairs), pointwise node / edge judge and blame prompts
    demos.py        "demos on": demo pools from recorded successes, preference pairs (no extra rollout)
    potentials.py   judged node and edge potentials, candidate probes and blame on the task model
    method.py       the search (seed pass, pools, rounds of MAP + train pass + blame-driven mutation)
"""

from optimizers.mapro.method import Mapro

__all__ = ["Mapro"]
