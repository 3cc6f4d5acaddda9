"""TAVO (`tavo`, default mode `truce-release`), protocol-v1 section 8.8, native on the engine's async runner.

    segments.py  a transcript cut into sub-trajectories (manager turn + what follows it; else a turn + its tools)
    credit.py    the sub-trajectory judge (T 0.3, 1-10 on three axes) and the Eq.-3 (example, role) credit
    policy.py    meta-knowledge, the shared verbalized-policy overlay, per-role refinement (the three modes)
    gate.py      the validation gate, the retry of a rejected round and the stop rules (pure)
    method.py    the rounds
"""

from optimizers.tavo.method import Tavo

__all__ = ["Tavo"]
