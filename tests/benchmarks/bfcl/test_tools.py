"""Native tool schemas (BFCL types -> JSON schema, OpenAI-safe names) and the output contracts."""

from __future__ import annotations

import re

from benchmarks.bfcl import tools


def test_types_are_converted_recursively(bench, rows):
    (tool,) = bench.native_tools(rows["simple_2"])
    assert tool["type"] == "function"
    function = tool["function"]
    assert function["name"] == "geo_distance"
    params = function["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["point_a", "point_b"]
    assert params["properties"]["point_a"] == {"type": "array", "description": "First point as (x, y).",
                                              "items": {"type": "number"}}
    assert params["properties"]["unit"]["enum"] == ["km", "mi"]

    record = bench.native_tools(rows["parallel_multiple_1"])[0]["function"]["parameters"]["properties"]
    items = record["transactions"]["items"]
    assert items["type"] == "object"
    assert items["properties"]["amount"]["type"] == "number"

    settings = bench.native_tools(rows["multiple_2"])[0]["function"]["parameters"]["properties"]["settings"]
    assert settings["type"] == "object" and settings["properties"]["theme"]["type"] == "string"


def test_any_has_no_type_and_schema_is_not_mutated(bench, rows):
    row = rows["multiple_1"]
    before = repr(row.task["functions"])
    data_param = bench.native_tools(row)[0]["function"]["parameters"]["properties"]["data"]
    assert "type" not in data_param and data_param["description"] == "The training data."
    assert repr(row.task["functions"]) == before
    assert row.task["functions"][0]["parameters"]["type"] == "dict"


def test_every_tool_name_is_openai_safe_and_maps_back(bench, rows):
    for row in rows.values():
        names = tools.original_names(row.task["functions"])
        for tool in bench.native_tools(row):
            name = tool["function"]["name"]
            assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name)
            assert names[name] in {f["name"] for f in row.task["functions"]}


def test_contracts(bench):
    v1, v2 = bench.contract(1), bench.contract(2)
    assert "fenced ```json```" in v1 and "non-empty list" in v1
    assert "tool calls" in v2 and '[{"function_name": {"argument": value, ...}}, ...]' in v2
    assert bench.contract() == v1
    assert bench.name == "bfcl" and "json" in bench.answer_format
