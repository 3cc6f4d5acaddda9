"""The official checker gets deep copies of its inputs (it may change them): the pickle round trip copies plain
data exactly, and anything pickle cannot take is copied by deepcopy."""

from __future__ import annotations

from benchmarks.bfcl.checker import _copy


def test_copy_is_deep_and_equal():
    value = [{"name": "f", "args": {"x": [1, 2.5, None, True], "t": (1, "a"), "s": "é"}}]
    copied = _copy(value)
    assert copied == value and type(copied[0]["args"]["t"]) is tuple
    copied[0]["args"]["x"].append(3)
    assert value[0]["args"]["x"] == [1, 2.5, None, True]


def test_copy_falls_back_to_deepcopy_for_what_pickle_refuses():
    class Local:  # a local class: pickle cannot find it by name, deepcopy copies it
        def __init__(self) -> None:
            self.items = [1, 2]

    value = {"a": Local()}
    copied = _copy(value)
    assert copied["a"] is not value["a"] and copied["a"].items == [1, 2]
    copied["a"].items.append(3)
    assert value["a"].items == [1, 2]
