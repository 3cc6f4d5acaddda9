"""HiveMind (`hivemind`, CG-OPO), protocol-v1 section 8.5, native on the engine's async, ledger-bound runner.

    shapley.py  planned coalitions and Shapley credit (exact over the power set, or Monte-Carlo permutations)
    lessons.py  the reflection prompt, its LESSONS block and the append-only prompt update
    budget.py   charging per cycle and the batch shrink
    cycle.py    one cycle: coalitions under member masks, credit, reflection, the validation gate
    method.py   the method: plan, smallest budget, the cycles until the budget is spent
"""

from optimizers.hivemind.method import HiveMind

__all__ = ["HiveMind"]
