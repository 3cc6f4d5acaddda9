"""Logical request seeds and paired evaluation seeds (protocol-v1 section 5.5).

Seeds are pure functions of logical coordinates, never of completion order, concurrency or a shared RNG.
"""

from __future__ import annotations

import hashlib
from typing import Any

from core.canonical import canonical_json
from core.methods import rng_bases

SEED_MODULUS = 2**31 - 1
OPTIMIZER_SEED_OFFSETS = {0: 0, 1: 1000, 2: 2000}


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
    """Seed of one model call inside a rollout (scheme `member-turn-hash/v1`): the rollout seed itself for the
    first call of member 0, otherwise a pure function of (rollout seed, role, member, turn)."""
    if member == 0 and turn == 0:
        return rollout_seed
    digest = hashlib.sha256(f"{rollout_seed}|{role}|{member}|{turn}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % SEED_MODULUS


def replica_seed(rollout_seed: int, replica: int) -> int:
    """Seed of every request of replica `replica` of an Independent team (scheme `replica-offset/v1`, section 2.2:
    "Replica i sends requests with seed i (otherwise identical)"): (rollout seed + i) mod 2^31 - 1.

    The reference fork's replica i builds its one chat client with seed = REQUEST_SEED + i, where REQUEST_SEED is
    the rollout's seed (section 5.5), and sends every turn of its ReAct loop through it. The sum is taken modulo 2^31 - 1 here so that every seed
    stays in section 5.5's range (the fork's sum leaves it only when a rollout seed is among the 9 largest)."""
    if replica < 0:
        raise ValueError(f"a replica index is >= 0, got {replica!r}")
    return (rollout_seed + replica) % SEED_MODULUS


TURN_HASH_SCHEME = "member-turn-hash/v1"
REPLICA_SCHEME = "replica-offset/v1"
# how the seed of a call (role, member, turn) derives from its rollout's seed, per scheme (card, README, condition)
MEMBER_SEED_RULES = {
    TURN_HASH_SCHEME: "call (role, member, turn) of a rollout sends the rollout seed when member 0 makes its first "
                      "call (turn 0), else int(sha256('rollout_seed|role|member|turn')[:8], big-endian) "
                      "mod 2^31 - 1",
    REPLICA_SCHEME: "replica i of the team sends (rollout_seed + i) mod 2^31 - 1 on every request, every turn "
                    "(protocol-v1 section 2.2)",
}
# Section 2.2: the topologies whose members are replicas (one shared prompt, otherwise identical requests). Every
# other topology (single, sequential, centralized, decentralized peers) keeps the turn-hash scheme.
REPLICA_TOPOLOGIES = frozenset({"independent"})
ROLLOUT_SEED_RULE = ("optimization rollouts: request_seed(optimizer seed, cell_id, 'optimize', iteration, example "
                     "id, role slot = bundle digest (a paired rollout: its pair key), turn slot = row position); "
                     "final validation and test: paired_evaluation_seed(condition_id, evaluation seed, split, "
                     "example id), independent of bundle and method (section 5.5)")


def member_seed_scheme(topology: str) -> str:
    """The seed scheme of a topology's members (the one place it is decided; the condition records it)."""
    return REPLICA_SCHEME if topology in REPLICA_TOPOLOGIES else TURN_HASH_SCHEME


def turn_seed(scheme: str, rollout_seed: int, role: str, member: int, turn: int) -> int:
    """Seed of call `turn` of agent `role.member` in a rollout seeded `rollout_seed`, under `scheme`."""
    if scheme == REPLICA_SCHEME:
        return replica_seed(rollout_seed, member)
    if scheme == TURN_HASH_SCHEME:
        return call_seed(rollout_seed, role, member, turn)
    raise ValueError(f"unknown member seed scheme {scheme!r}; known: {', '.join(MEMBER_SEED_RULES)}")


def seed_derivation(condition: dict[str, Any] | None) -> dict[str, str] | None:
    """How the request seeds of a job with this condition were derived (the card's `run.seed_derivation`). A
    condition without `member_seed_scheme` is a turn-hash one: any topology but Independent, or an Independent job
    written before replica seeds."""
    if not isinstance(condition, dict):
        return None
    scheme = str(condition.get("member_seed_scheme", TURN_HASH_SCHEME))
    return {"rollout_seed": ROLLOUT_SEED_RULE, "member_seed_scheme": scheme,
            "member_seed": MEMBER_SEED_RULES.get(scheme, "unknown scheme"),
            "retries": "an infrastructure retry resends its calls with the same seeds (section 5.3)"}


def method_rng_seed(method: str, optimizer_seed: int) -> int:
    """The seed of a method's own `random.Random`: its RNG base (core/methods.py, 0 when unregistered) + the
    optimizer seed (gepa 0, mipro 9, tavo 233 as the reference forks; pinned in tests/optimizers/test_rng_bases.py)."""
    return rng_bases().get(method, 0) + optimizer_seed
