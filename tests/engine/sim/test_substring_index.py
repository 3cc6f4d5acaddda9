"""The simulated policy's substring index answers exactly what testing every task text in order answers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from engine.sim.substring_index import SubstringIndex

# few distinct words and separators, so texts share words, overlap and contain one another
WORDS = st.sampled_from(["alpha", "beta", "gamma", "delt", "ab", "x", "alphabeta", "café", "a_b_c", "1234"])
SEPS = st.sampled_from([" ", "\n", ", ", "(", ")", "", "-", ": "])
TEXTS = st.lists(st.tuples(WORDS, SEPS), min_size=1, max_size=6).map(lambda parts: "".join(w + s for w, s in parts))


def linear(texts: list[str], message: str) -> str | None:
    return next((t for t in texts if t and t in message), None)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(texts=st.lists(TEXTS, min_size=1, max_size=12), junk=st.lists(TEXTS, max_size=4),
       picks=st.lists(st.integers(min_value=0, max_value=11), max_size=3), glue=SEPS)
def test_same_answer_as_testing_every_text_in_order(texts, junk, picks, glue):
    texts = sorted(texts, key=len, reverse=True)  # the policy's order: longest first, stable
    chosen = [texts[i % len(texts)] for i in picks]
    message = glue.join([*junk[:2], *chosen, *junk[2:]])
    assert SubstringIndex(texts).first_contained(message) == linear(texts, message)


def test_text_glued_to_surrounding_words_is_still_found():
    texts = ["Call the weather tool for Paris today", "weather"]
    index = SubstringIndex(texts)
    # the task's edge words are glued to the surrounding text: only interior words may key the lookup
    assert index.first_contained("PRIOR STAGE:Call the weather tool for Paris todayand more") == texts[0]
    assert index.first_contained("nothing about the weather-ish stuff") == "weather"
    assert index.first_contained("no match here") is None
