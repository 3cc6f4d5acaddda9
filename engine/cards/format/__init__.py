"""Rollout cards, pure part: row schemas, bundle models, canonical lines, redaction, mutation replay and the
validator's checks over in-memory rows (rollout-card spec sections 1 and 4). No I/O; imports only `core`."""

from engine.cards.format.problems import Problem, Severity

__all__ = ["Problem", "Severity"]
