"""Logical request seeds and paired evaluation seeds (protocol-v1 section 5.5).

Seeds are pure functions of logical coordinates, never of completion order, concurrency or a shared RNG.
"""

from __future__ import annotations

import hashlib

from core.canonical import canonical_json

SEED_MODULUS = 2**31 - 1
OPTIMIZER_SEED_OFFSETS = {0: 0, 1: 1000, 2: 2000}
METHOD_RNG_BASE = {"gepa": 0, "mipro": 9, "maspo": 0, "tavo": 233}


def seed_offset(optimizer_seed: int) -> int:
    try:
        return OPTIMIZER_SEED_OFFSETS[optimizer_seed]
    except KeyError:
        raise ValueError(f"optimizer seed must be 0, 1 or 2, got {optimizer_seed!r}") from None


def request_seed(
    optimizer_seed: int,
    cell_id: str,
    phase: str,
    iteration: int | str,
    example_id: str,
    role: str,
    turn: int | str,
    attempt: int = 0,
) -> int:
    """SHA-256 over the '|'-joined fields; first 8 bytes big-endian, plus offset, modulo 2^31 - 1.

    `attempt` is the logical attempt slot of the protocol; infrastructure retries reuse the seed, so the engine
    always passes 0 for them (the slot exists for methods that deliberately re-sample a row).
    """
    offset = seed_offset(optimizer_seed)
    fields = [optimizer_seed, offset, cell_id, phase, iteration, example_id, role, turn, attempt]
    digest = hashlib.sha256("|".join(str(f) for f in fields).encode("utf-8")).digest()
    return (int.from_bytes(digest[:8], "big") + offset) % SEED_MODULUS


def paired_evaluation_seed(condition_id: str, evaluation_seed: int, split: str, example_id: str) -> int:
    """Hash of {schema, condition_id, evaluation_seed, offset, split, example_id}; 16 hex digits mod 2^31 - 1.

    Independent of bundle and method: seed and deployed bundles see identical seeds per row.
    """
    payload = {
        "schema": "paired-evaluation-seed",
        "condition_id": condition_id,
        "evaluation_seed": evaluation_seed,
        "offset": seed_offset(evaluation_seed),
        "split": split,
        "example_id": example_id,
    }
    digest = hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()
    return int(digest[:16], 16) % SEED_MODULUS


def call_seed(rollout_seed: int, role: str, member: int, turn: int) -> int:
    """Seed of one model call inside a rollout: the rollout seed itself for the first call of member 0,
    otherwise a pure function of (rollout seed, role, member, turn)."""
    if member == 0 and turn == 0:
        return rollout_seed
    digest = hashlib.sha256(f"{rollout_seed}|{role}|{member}|{turn}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % SEED_MODULUS


def method_rng_seed(method: str, optimizer_seed: int) -> int:
    return METHOD_RNG_BASE.get(method, 0) + optimizer_seed
