"""Answer extraction (tool calls first, else the last fenced call list) and vote keys."""

from __future__ import annotations

from benchmarks.bfcl import extract_calls
from core.models import AgentOutput


def test_tool_calls_win_and_names_map_back(rows):
    functions = rows["simple_0"].task["functions"]
    output = AgentOutput(text='```json\n[{"other": {}}]\n```',
                         tool_calls=({"name": "math_factorial", "arguments": '{"number": 7}'},))
    assert extract_calls(output, functions) == [{"math.factorial": {"number": 7}}]
    wrapped = AgentOutput(tool_calls=({"id": "c1", "type": "function",
                                       "function": {"name": "math_factorial", "arguments": {"number": 7}}},))
    assert extract_calls(wrapped, functions) == [{"math.factorial": {"number": 7}}]


def test_bad_tool_call_arguments_are_malformed():
    assert extract_calls(AgentOutput(tool_calls=({"name": "f", "arguments": "{not json"},))) is None
    assert extract_calls(AgentOutput(tool_calls=({"name": "f", "arguments": "[1]"},))) is None
    assert extract_calls(AgentOutput(tool_calls=({"name": "f", "arguments": '{"x": NaN}'},))) is None


def test_last_parsable_fenced_list_is_used():
    text = ('draft:\n```json\n[{"a": {"x": 1}}]\n```\nfinal:\n```json\n[{"b": {"y": 2}}]\n```\n'
            "```\nnot json\n```\n```json\n{\"c\": {}}\n```\nTERMINATE")
    assert extract_calls(AgentOutput(text=text)) == [{"b": {"y": 2}}]


def test_text_names_are_kept_as_written(rows):
    functions = rows["simple_0"].task["functions"]
    output = AgentOutput(text='```json\n[{"math_factorial": {"number": 7}}]\n```')
    assert extract_calls(output, functions) == [{"math_factorial": {"number": 7}}]


def test_non_canonical_call_shapes_are_passed_on_as_written():
    # protocol-v1 §10 BFCL: the last fenced list of objects goes to the official checker unchanged (no rewriting)
    text = '```json\n[{"name": "f", "arguments": {"x": 1}}, {"fn_name": "g", "args": {}}]\n```'
    assert extract_calls(AgentOutput(text=text)) == [{"name": "f", "arguments": {"x": 1}}, {"fn_name": "g", "args": {}}]
    for text in ('```json\n[{"f": 1}]\n```', '```json\n[{"f": {}, "g": {}}]\n```'):
        assert extract_calls(AgentOutput(text=text)) is not None  # a list of objects; BFCL's format check rejects it


def test_malformed_answers():
    for text in (None, "", "I would call f(x=1).", "```json\n[]\n```", "```json\n[1, 2]\n```",
                 '[{"f": {"x": 1}}]'):
        assert extract_calls(AgentOutput(text=text)) is None, text


def test_vote_key_is_order_free_only_for_parallel(bench, rows):
    a = '{"music.play": {"song": "Halo", "artist": "Beyonce", "minutes": 10}}'
    b = '{"music.play": {"minutes": 5, "song": "Yellow", "artist": "Coldplay"}}'
    first = AgentOutput(text=f"```json\n[{a}, {b}]\n```")
    second = AgentOutput(text=f"```json\n[{b}, {a}]\n```")
    parallel = rows["parallel_0"]
    assert bench.vote_key(parallel, first) == bench.vote_key(parallel, second) is not None
    simple = rows["simple_0"]
    assert bench.vote_key(simple, first) != bench.vote_key(simple, second)
    assert bench.vote_key(simple, AgentOutput(text="no call")) is None
    native = AgentOutput(tool_calls=({"name": "math_factorial", "arguments": '{"number": 7}'},))
    textual = AgentOutput(text='```json\n[{"math.factorial": {"number": 7}}]\n```')
    assert bench.vote_key(simple, native) == bench.vote_key(simple, textual) == '[{"math.factorial":{"number":7}}]'
