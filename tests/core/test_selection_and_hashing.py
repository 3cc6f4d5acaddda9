from hypothesis import given
from hypothesis import strategies as st
import pytest

from core.canonical import canonical_json, content_hash, seal, verify_seal
from core.models import PromptBundle, RolloutRecord, RolloutStatus
from core.selection import decide, forbidden_metadata


def rec(ex, score, status=RolloutStatus.SUCCESS):
    return RolloutRecord(rollout_id=ex, example_id=ex, phase="validation", status=status, score=score,
                         request_seed=1, bundle_sha256="b")


IDS = ["a", "b", "c"]


def run(seed_scores, inc_scores, **kw):
    args = dict(ordered_ids=IDS, seed_records=[rec(i, s) for i, s in zip(IDS, seed_scores)],
                incumbent_records=[rec(i, s) for i, s in zip(IDS, inc_scores)], optimization_reportable=True,
                optimization_infra_invalid=False, incumbent_valid=True)
    args.update(kw)
    return decide(**args)


def test_strictly_better_deploys_and_ties_keep_the_seed():
    assert run([1, 0, 0], [1, 1, 0]).selected_candidate == "incumbent"
    tie = run([1, 0, 0], [0, 1, 0])
    assert (tie.selected_candidate, tie.fallback_reason) == ("seed", "validation_tie")
    assert run([1, 1, 0], [1, 0, 0]).fallback_reason == "validation_regression"


def test_forced_fallbacks_null_the_scores():
    bad = run([1, 1, 1], [1, 1, 1], incumbent_records=[rec("a", 1), rec("b", None, RolloutStatus.INFRASTRUCTURE_FAILURE),
                                                      rec("c", 1)])
    assert bad.fallback_reason == "invalid_record:b:infrastructure_failure" and bad.incumbent_score is None
    assert run([1, 1, 1], [1, 1, 1], incumbent_records=[rec("a", 1), rec("c", 1), rec("b", 1)]).fallback_reason == \
        "unpaired_validation_ids"
    assert run([1, 1, 1], [1], incumbent_records=[rec("a", 1), rec("a", 1), rec("c", 1)]).fallback_reason == \
        "duplicate_example:a"
    assert run([1, 1, 1], [1, 2, 1]).fallback_reason == "score_out_of_range:b"
    assert run([], [], ordered_ids=[]).fallback_reason == "empty_validation"
    assert run([0, 0, 0], [1, 1, 1], incumbent_valid=False).fallback_reason == "invalid_incumbent_bundle"
    assert run([0, 0, 0], [1, 1, 1], optimization_infra_invalid=True).fallback_reason == \
        "infrastructure_invalid_optimization"


def test_forbidden_metadata_is_found_at_any_depth():
    assert forbidden_metadata({"a": {"b": [{"test_score": 1}]}, "test_ids": []}) == ["test_ids", "test_score"]


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c, max_size=4),
                           max_leaves=20)


@pytest.mark.slow
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_canonical_hash_is_stable_under_key_order(d):
    reordered = dict(reversed(list(d.items())))
    assert canonical_json(d) == canonical_json(reordered)
    assert content_hash(d) == content_hash(reordered)


def test_seal_detects_tampering():
    sealed = seal({"x": 1, "y": [1, 2]})
    assert verify_seal(sealed)
    assert not verify_seal({**sealed, "x": 2})


def test_bundle_digest_covers_roles_demos_metadata():
    a = PromptBundle(roles={"solver": "hi"})
    assert a.digest == content_hash({"roles": {"solver": "hi"}, "demos": [], "metadata": {}})
    assert PromptBundle(roles={"solver": "hi"}, metadata={"k": 1}).digest != a.digest
    assert PromptBundle.from_json(a.to_json()) == a
