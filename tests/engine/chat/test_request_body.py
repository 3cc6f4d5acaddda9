"""Decoding travels as core.protocol.Decoding end to end; the request bodies it builds are byte-identical to the
ones the dict path built (issue 36, item 3): the same keys in the same order, the same canonical JSON (the bytes
on the wire and the replay key), for every decoding the protocol sends."""

from __future__ import annotations

from typing import Any

import pytest

from core.canonical import canonical_json
from core.protocol import (
    EVALUATION_DECODING,
    FRAMEWORK_OMITTED_PARAMS,
    OPTIMIZATION_DECODING,
    PROTOCOL_CONSTANTS,
    REFLECTION_DECODING,
    REPETITION_PENALTY,
    Decoding,
)
from engine.chat.body import request_body
from engine.cli.gateway_cmd import DECODINGS
from engine.job.optimization import TASK_MODEL_COMPONENTS

# the dict path as it was: the protocol's frozen dicts, the job adding the repetition penalty, the agent context
# defaulting it (and `thinking`) when a dict lacked them (the gateway command's dicts did)
OLD_OPTIMIZATION = {"temperature": 0.2, "top_p": 0.9, "max_tokens": 32768, "thinking": False}
OLD_EVALUATION = {"temperature": 0.0, "top_p": 0.9, "max_tokens": 32768, "thinking": False}
OLD_REFLECTION = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 48000, "thinking": True}
OLD_COMPONENTS = {"judge": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 1024},
                  "probe": {"temperature": 0.2, "top_p": 0.9, "max_tokens": 768}}
MESSAGES = [{"role": "system", "content": "be right"}, {"role": "user", "content": "2+2? ünïcode"}]
TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]


def old_agent_body(decoding: dict[str, Any], tools: Any, framework: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "m", "messages": MESSAGES, "temperature": decoding["temperature"], "top_p": decoding["top_p"],
        "max_tokens": decoding["max_tokens"], "repetition_penalty": decoding.get("repetition_penalty", 1.05),
        "chat_template_kwargs": {"enable_thinking": bool(decoding.get("thinking", False))}}
    if tools:
        body["tools"] = list(tools)
        body["tool_choice"] = "auto"
    for omitted in FRAMEWORK_OMITTED_PARAMS.get(framework or "", ()):
        body.pop(omitted, None)
    return body


def old_component_body(temperature: float, top_p: float, max_tokens: int, thinking: bool,
                       extra: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "messages": MESSAGES, "temperature": temperature, "top_p": top_p, "max_tokens": max_tokens,
            "chat_template_kwargs": {"enable_thinking": thinking}, **extra}


def same_bytes(new: dict[str, Any], old: dict[str, Any]) -> None:
    assert list(new.items()) == list(old.items())
    assert canonical_json(new) == canonical_json(old)
    assert [type(v) for v in new.values()] == [type(v) for v in old.values()]  # 0.0 stays a float, 1024 an int


AGENT_DECODINGS = [  # (typed, the dict the old path was handed)
    (OPTIMIZATION_DECODING, {**OLD_OPTIMIZATION, "repetition_penalty": REPETITION_PENALTY}),  # the optimize phase
    (EVALUATION_DECODING, {**OLD_EVALUATION, "repetition_penalty": REPETITION_PENALTY}),  # every evaluation
    (DECODINGS["evaluation"], OLD_EVALUATION),  # `python -m engine gateway --decoding evaluation`
    (DECODINGS["optimization"], OLD_OPTIMIZATION),
]


@pytest.mark.parametrize("typed,old", AGENT_DECODINGS)
@pytest.mark.parametrize("tools", [None, TOOLS])
@pytest.mark.parametrize("framework", [None, "langgraph", "crewai", "autogen", "openai_agents"])
def test_agent_turn_bodies_are_the_dict_paths(typed: Decoding, old: dict[str, Any], tools: Any,
                                              framework: str | None):
    new = request_body("m", MESSAGES, typed, tools, omit=FRAMEWORK_OMITTED_PARAMS.get(framework or "", ()))
    same_bytes(new, old_agent_body(old, tools, framework))


class _Endpoint:
    model_id = "m"


def _client(**kw: Any) -> Any:
    from engine.reflection import ReflectionClient

    class _Store:
        generation = 0

    return ReflectionClient(endpoint=_Endpoint(), store=_Store(), run_node="run/c", cell_id="c",  # type: ignore
                            optimizer_seed=0, **kw)


@pytest.mark.parametrize("override", [{}, {"temperature": 0.7}, {"max_tokens": 100}])
def test_reflection_and_component_bodies_are_the_dict_paths(override: dict[str, Any]):
    old = OLD_REFLECTION
    new = _client().body_for(MESSAGES, **override)
    same_bytes(new, old_component_body(override.get("temperature", old["temperature"]), old["top_p"],
                                       override.get("max_tokens", old["max_tokens"]), old["thinking"], {}))
    for name, spec in OLD_COMPONENTS.items():
        new = _client(component=name, decoding=TASK_MODEL_COMPONENTS[name]).body_for(MESSAGES, **override)
        same_bytes(new, old_component_body(override.get("temperature", spec["temperature"]), spec["top_p"],
                                           override.get("max_tokens", spec["max_tokens"]), False,
                                           {"repetition_penalty": REPETITION_PENALTY}))


def test_the_frozen_protocol_constants_hash_the_same_dicts():
    assert PROTOCOL_CONSTANTS["optimization_decoding"] == OLD_OPTIMIZATION
    assert PROTOCOL_CONSTANTS["evaluation_decoding"] == OLD_EVALUATION
    assert PROTOCOL_CONSTANTS["reflection_decoding"] == OLD_REFLECTION
    assert [canonical_json(d.protocol_json()) for d in (OPTIMIZATION_DECODING, EVALUATION_DECODING,
                                                        REFLECTION_DECODING)] == [
        canonical_json(d) for d in (OLD_OPTIMIZATION, OLD_EVALUATION, OLD_REFLECTION)]


def test_a_decoding_is_typed_and_frozen():
    with pytest.raises(ValueError):
        Decoding(temperature=0.2, top_p=0.9, max_tokens="32768", thinking=False, repetition_penalty=1.05)  # type: ignore
    with pytest.raises(ValueError):
        Decoding(temperature=0.2, top_p=0.9, max_tokens=1, thinking=False)  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        OPTIMIZATION_DECODING.temperature = 1.0  # type: ignore[misc]
