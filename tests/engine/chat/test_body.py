"""engine/chat/body.py: the one JSON parser of outside bodies (chat client, start-up check, gateway) and its limits."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import MalformedResponseError
from engine.chat.body import BodyError, parse_json
from engine.chat.errors import decode_body

POISON = [("[" * 50_000 + "]" * 50_000, "nested too deeply"), ('{"n": ' + "9" * 5000 + "}", "too many digits"),
          (b'{"a": "\xff"}', "UnicodeDecodeError"), ("{not json", "JSONDecodeError"), ("", "JSONDecodeError")]


@pytest.mark.parametrize("body,why", POISON)
def test_poison_bodies_are_one_clean_error(body, why):
    with pytest.raises(BodyError) as found:
        parse_json(body)
    message = str(found.value)
    assert message.startswith("not valid JSON (") and why in message and "\n" not in message and len(message) < 220
    with pytest.raises(MalformedResponseError, match="response body is not valid JSON"):
        decode_body(body if isinstance(body, str) else body.decode("utf-8", "replace") + "{")


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(JSON)
def test_every_json_value_within_the_limits_round_trips(value):
    text = json.dumps(value)
    assert parse_json(text) == value == parse_json(text.encode())
