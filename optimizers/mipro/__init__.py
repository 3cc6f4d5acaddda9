"""MIPRO (`mipro`), protocol-v1 section 8.2: bootstrapped demos, grounded proposals, seeded TPE search."""

from optimizers.mipro.method import Mipro

__all__ = ["Mipro"]
