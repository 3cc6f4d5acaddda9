"""canonical_json encodes with orjson where that gives the reference text (json.dumps, sorted keys, compact,
non-ASCII kept, no NaN/Infinity), and falls back to the reference everywhere else: same text, same errors."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import struct
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.canonical import _orjson_agrees, canonical_json, content_hash, reference_json


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Plain(enum.Enum):
    A = "a"


@dataclasses.dataclass
class Point:
    x: int


class Tagged(str):
    def __str__(self) -> str:
        return "not me"


class Counted(int):
    def __repr__(self) -> str:
        return "not me"


class OddDict(dict):  # type: ignore[type-arg]
    def items(self):  # type: ignore[no-untyped-def]
        return [("swapped", 1)]


class Ratio(float):
    pass


def outcome(encode: Any, value: Any) -> tuple[str, Any]:
    try:
        return "text", encode(value)
    except Exception as exc:  # noqa: BLE001 - the error type is what is compared
        return "error", type(exc)


def same(value: Any) -> None:
    assert outcome(canonical_json, value) == outcome(reference_json, value)


texts = st.text(st.characters(codec=None, categories=None), max_size=12)  # lone surrogates and controls included
floats = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
leaves = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-2**70, max_value=2**70) | floats
          | texts | st.sampled_from([Colour.RED, Level.HIGH]))
keys = texts | st.integers() | st.booleans() | st.none() | st.sampled_from([Colour.RED])
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
                      | st.dictionaries(keys, inner, max_size=5), max_leaves=30)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(values)
def test_generated_values_encode_as_the_reference(value: Any) -> None:
    same(value)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(st.characters(codec="utf-8"), max_size=6), st.integers(), max_size=12))
def test_keys_sort_in_code_point_order(value: dict[str, int]) -> None:
    assert canonical_json(value) == reference_json(value)


def test_floats_of_every_decimal_magnitude() -> None:
    for exponent in range(-330, 310):
        for mantissa in ("1", "1.5", "2.220446049250313", "9.999999999999998"):
            x = float(f"{mantissa}e{exponent}")
            if math.isfinite(x):
                same(x)
                same(-x)
                same({"v": [x]})


def test_random_bit_patterns() -> None:
    for i in range(20_000):
        x = struct.unpack("<d", struct.pack("<Q", (i * 0x9E3779B97F4A7C15) % 2**64))[0]
        same(x)


@pytest.mark.parametrize("value", [
    float("nan"), [1, float("inf")], {"a": -float("inf")}, 1e-5, [2.5e-7], "\ud800", {"k": "x\udfff"}, 2**64,
    -2**63 - 1, {1: "int key"}, {None: 1, "b": 2}, {1.5: 2}, {(1, 2): 3}, {True: 1}, Plain.A, Point(1),
    datetime.datetime(2026, 1, 1), uuid.UUID(int=5), Tagged("raw"), Counted(7), OddDict(a=2), Ratio(0.5), b"bytes",
    {"nested": Plain.A}, [[[[[[[[[[[]]]]]]]]]]], "\x00\x1f\x7f\u2028\ufeff\U0001f600\"\\/", -0.0, 0.0, 1e16,
    1e300, 5e-324, 0.0001, [Colour.RED, Level.HIGH, {"k": Colour.RED}],
])
def test_edge_values(value: Any) -> None:
    same(value)


def test_deep_nesting_and_cycles() -> None:
    deep: Any = "leaf"
    for _ in range(400):  # past orjson's 254 levels: the reference encodes it
        deep = [deep]
    same(deep)
    loop: list[Any] = []
    loop.append(loop)
    assert outcome(canonical_json, loop) == ("error", ValueError)  # the reference's "Circular reference detected"


def test_the_store_payload_shapes_take_the_orjson_path() -> None:
    payload = {"part_kind": "model_call", "request": {"messages": [{"role": "system", "content": "Réponds."}],
                                                      "tools": None},
               "params": {"temperature": 0.7, "top_p": 0.9, "max_tokens": 512, "seed": 12345},
               "response": {"content": "", "tool_calls": [{"id": "c1", "name": "f", "arguments": "{\"x\": 1}"}],
                            "usage": {"prompt_tokens": 10, "completion_tokens": None}},
               "latency_seconds": 0.050123, "mutation_type": Colour.RED, "level": Level.HIGH}
    assert _orjson_agrees(payload)
    assert canonical_json(payload) == reference_json(payload)
    assert content_hash(payload) == content_hash(dict(reversed(list(payload.items()))))
    for odd in (1e-5, float("nan"), Plain.A, Point(1), OddDict(), Ratio(1.0), [uuid.UUID(int=1)]):
        assert not _orjson_agrees({"k": [odd]})
