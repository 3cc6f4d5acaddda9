import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.canonical import canonical_json
from core.seeds import SEED_MODULUS, call_seed, paired_evaluation_seed, request_seed


def test_request_seed_matches_the_protocol_formula():
    fields = [1, 1000, "cell", "optimize", 3, "ex", "role", 2, 0]
    digest = hashlib.sha256("|".join(map(str, fields)).encode()).digest()
    expected = (int.from_bytes(digest[:8], "big") + 1000) % (2**31 - 1)
    assert request_seed(1, "cell", "optimize", 3, "ex", "role", 2) == expected


def test_paired_seed_matches_the_protocol_formula_and_ignores_bundle():
    payload = {"schema": "paired-evaluation-seed", "condition_id": "c", "evaluation_seed": 2, "offset": 2000,
               "split": "test", "example_id": "x"}
    expected = int(hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16], 16) % (2**31 - 1)
    assert paired_evaluation_seed("c", 2, "test", "x") == expected


def test_seed_outside_protocol_is_refused():
    with pytest.raises(ValueError):
        request_seed(3, "c", "p", 0, "x", "r", 0)


@given(st.integers(0, 2), st.text(max_size=20), st.text(max_size=20), st.integers(0, 1000))
def test_seeds_are_in_range_and_pure(seed, cell, ex, turn):
    a = request_seed(seed, cell, "optimize", 1, ex, "r", turn)
    assert a == request_seed(seed, cell, "optimize", 1, ex, "r", turn)
    assert 0 <= a < SEED_MODULUS
    c = call_seed(a, "solver", 1, turn)
    assert 0 <= c < SEED_MODULUS and c == call_seed(a, "solver", 1, turn)


def test_first_call_uses_the_rollout_seed_and_members_differ():
    assert call_seed(12345, "solver", 0, 0) == 12345
    assert len({call_seed(12345, "solver", m, 0) for m in range(8)}) == 8
