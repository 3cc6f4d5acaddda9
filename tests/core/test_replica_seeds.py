"""Replica seeds (issue 35 item 5): protocol-v1 section 2.2, Independent: "Replica i sends requests with seed i
(otherwise identical)"; section 5.5: the rollout's seed (logical request seed, paired evaluation seed) depends
on neither bundle nor method; section 5.6: the condition names what changes the requests.

Replica i sends (rollout seed + i) mod 2^31 - 1 on every request (the reference fork's replica client is built
with REQUEST_SEED + i and serves every turn of its loop); every other topology keeps the member-turn hash, so its
recorded calls and its condition_id are the ones they were."""

from __future__ import annotations

import pytest

from core.canonical import content_hash
from core.protocol import condition
from core.seeds import (MEMBER_SEED_RULES, REPLICA_SCHEME, SEED_MODULUS, TURN_HASH_SCHEME, call_seed,
                        member_seed_scheme, replica_seed, seed_derivation, turn_seed)

S22 = "protocol-v1 §2.2: replica i sends seed (rollout seed + i)"


@pytest.mark.parametrize("rollout_seed,replica,expected", [
    (0, 0, 0), (0, 3, 3), (700, 0, 700), (700, 9, 709), (123456789, 7, 123456796),
    (SEED_MODULUS - 1, 0, SEED_MODULUS - 1), (SEED_MODULUS - 1, 1, 0), (SEED_MODULUS - 3, 9, 6),
])
def test_replica_seed_is_the_rollout_seed_plus_the_replica_index(rollout_seed, replica, expected):
    assert replica_seed(rollout_seed, replica) == expected, S22
    assert 0 <= replica_seed(rollout_seed, replica) < SEED_MODULUS  # section 5.5's range


@pytest.mark.parametrize("n", [2, 4, 8, 10])
def test_every_turn_of_replica_i_sends_the_same_seed_and_replicas_differ(n):
    """Section 2.2 "otherwise identical": the seed depends on the replica only, never on the turn or the role."""
    seeds = {(i, t): turn_seed(REPLICA_SCHEME, 5000, "solver", i, t) for i in range(n) for t in range(6)}
    assert all(seeds[(i, t)] == 5000 + i for i, t in seeds), S22
    assert len(set(seeds.values())) == n
    assert turn_seed(REPLICA_SCHEME, 5000, "coder", 3, 4) == turn_seed(REPLICA_SCHEME, 5000, "solver", 3, 0)


def test_only_independent_members_are_replicas():
    assert member_seed_scheme("independent") == REPLICA_SCHEME, S22
    for topology in ("single", "sequential", "centralized", "decentralized"):
        assert member_seed_scheme(topology) == TURN_HASH_SCHEME


# call_seed values before issue 35 item 5 (computed with the code of main at dc50311)
BEFORE = {(700, "debater", 0, 0): 700, (700, "debater", 1, 0): 234132070, (700, "debater", 3, 1): 2133421026,
          (700, "solver", 1, 0): 388047860, (700, "solver", 0, 1): 332172457}


@pytest.mark.parametrize("key", sorted(BEFORE))
def test_the_other_topologies_keep_their_seeds(key):
    """Decentralized peers, sequential stages, centralized teams, single: the turn-hash seeds they had."""
    assert call_seed(*key) == BEFORE[key]
    assert turn_seed(TURN_HASH_SCHEME, *key) == BEFORE[key]


def test_an_unknown_scheme_is_refused():
    with pytest.raises(ValueError, match="unknown member seed scheme"):
        turn_seed("seed-i/v0", 1, "solver", 0, 0)
    with pytest.raises(ValueError):
        replica_seed(1, -1)


def _condition(topology: str) -> dict[str, object]:
    return condition(task="t", topology=topology, framework="native", communication="freeform", team_size=4,
                     task_model="qwen", initial_bundle_sha256="b", scorer_id="s", split_sha256="x")


# content_hash of _condition(topology) before issue 35 item 5 (main at dc50311)
CONDITION_BEFORE = {
    "single": "cfa685bb26f0cd3e6aaf760fff0e5326da0079dfe047a144b5d5b830115df9ae",
    "sequential": "f1dd53f975e6e181227ddaa93e71993a43039a2b3f4388108b95822caceea230",
    "centralized": "94e4f4d6b13fcc5496bb79bfb7928aeffa50ef60828996beb071ef946a65602e",
    "decentralized": "fb048ad62bb035076523272d08fa7a04554de6bf7e4233db32cf5a09390ea4dd",
}
INDEPENDENT_BEFORE = "53e02e34eaaaaf050a6e771a7e6adb583919a63e2593e806a823728c57820679"


@pytest.mark.parametrize("topology", sorted(CONDITION_BEFORE))
def test_other_condition_ids_are_unchanged(topology):
    """Section 5.6: their requests did not change, so neither does their condition (nor its cached evaluations)."""
    cond = _condition(topology)
    assert "member_seed_scheme" not in cond
    assert content_hash(cond) == CONDITION_BEFORE[topology]


def test_the_independent_condition_names_its_replica_seeds():
    """Section 5.6: the condition holds what changes the requests; the Independent one moves by that key only."""
    cond = _condition("independent")
    assert cond["member_seed_scheme"] == REPLICA_SCHEME, S22
    assert content_hash(cond) != INDEPENDENT_BEFORE
    before = {k: v for k, v in cond.items() if k != "member_seed_scheme"}
    assert content_hash(before) == INDEPENDENT_BEFORE


def test_the_seed_derivation_a_card_states():
    new = seed_derivation(_condition("independent"))
    assert new is not None and new["member_seed_scheme"] == REPLICA_SCHEME
    assert "(rollout_seed + i) mod 2^31 - 1 on every request" in new["member_seed"]
    assert "paired_evaluation_seed" in new["rollout_seed"] and "request_seed" in new["rollout_seed"]
    old = {k: v for k, v in _condition("independent").items() if k != "member_seed_scheme"}
    assert seed_derivation(old) == {**new, "member_seed_scheme": TURN_HASH_SCHEME,
                                    "member_seed": MEMBER_SEED_RULES[TURN_HASH_SCHEME]}
    assert seed_derivation(None) is None
