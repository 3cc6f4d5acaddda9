"""MASPO (`maspo`), protocol-v1 section 8.4, native on the engine's async, ledger-bound runner.

    reward.py   the joint reward arithmetic, its fallbacks and the judge verdict (pure)
    prompts.py  the generic role-aware proposal template and pairwise A/B judge prompt (every dataset but MATH)
    templates.py  the template table keyed by dataset: generic by default, MATH's rendering of the upstream ones
    credit.py   paired-rollout credit: pairwise judging of own / successor outputs, global win-tie-loss
    method.py   coordinate ascent over roles with an evolutionary beam per role
The role graph and its ascent order come from optimizers/mapro/roles.py.
"""

from optimizers.maspo.method import Maspo

__all__ = ["Maspo"]
