"""The gold-free vote rule: largest bucket, ties to the bucket with the lowest member, its lowest member."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.voting import majority_vote


def test_largest_bucket_wins_and_its_lowest_member_is_selected():
    vote = majority_vote(["B", "A", "A", "B", "A"])
    assert vote.selected == 1 and vote.winner_key == "A" and not vote.tie
    assert vote.summary()["buckets"] == [{"key": "B", "members": [0, 3]}, {"key": "A", "members": [1, 2, 4]}]


def test_tie_goes_to_the_bucket_containing_the_lowest_member_index():
    vote = majority_vote(["X", "Y", "Y", "X"])
    assert vote.selected == 0 and vote.winner_key == "X" and vote.tie
    vote = majority_vote([None, "Y", "X", "X", "Y"])
    assert vote.selected == 1 and vote.winner_key == "Y" and vote.tie


def test_abstentions_do_not_count_and_blank_keys_abstain():
    vote = majority_vote([None, "", "  ", "C"])
    assert vote.selected == 3 and vote.abstentions == (0, 1, 2)
    assert vote.summary()["abstentions"] == [0, 1, 2]


def test_all_abstain_selects_member_zero():
    vote = majority_vote([None, None, ""])
    assert vote.selected == 0 and vote.winner_key is None and vote.summary()["all_abstained"]


def test_single_member_and_empty_team():
    assert majority_vote(["k"]).selected == 0
    with pytest.raises(ValueError):
        majority_vote([])


@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c", ""])), min_size=1, max_size=10))
def test_vote_laws(keys):
    vote = majority_vote(keys)
    cast = [k if k else None for k in keys]
    counts = {k: cast.count(k) for k in cast if k is not None}
    if not counts:
        assert vote.selected == 0
        return
    best = max(counts.values())
    assert cast[vote.selected] is not None and counts[cast[vote.selected]] == best
    # the selected member is the lowest index among all members of a largest bucket
    assert vote.selected == min(i for i, k in enumerate(cast) if k is not None and counts[k] == best)
    # the vote never depends on anything but the keys
    assert majority_vote(list(keys)) == vote
