"""The scripted policy as a pure function (no HTTP)."""

from __future__ import annotations

import json

import pytest

from engine.sim.policy import CONTRACT_MARKER, NO_MATCH_TEXT, Policy, mode_draw
from tests.engine.sim.fake_benchmark import ARITH, FORMAT, TOOL, ArithBenchmark, answering_messages

BENCH = ArithBenchmark()
ROWS = BENCH.load_rows(BENCH.splits().eval_ids)
TEXT_ROWS = [r for r in ROWS if not r.task["tool"]]


def body(row_id: str, seed: int, extra_system: str = "", model: str = "qwen") -> dict:
    return {"model": model, "seed": seed, "messages": answering_messages(row_id, extra_system)}


def test_same_request_and_seed_gives_identical_body(policy: Policy) -> None:
    for row in ROWS:
        first = policy.respond(body(row.id, 7))
        again = policy.respond(json.loads(json.dumps(body(row.id, 7))))
        assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)


def test_different_seeds_can_differ(policy: Policy) -> None:
    contents = {policy.respond(body("r1", s))["choices"][0]["message"]["content"] for s in range(20)}
    assert len(contents) > 1


def test_expected_mode_predicts_every_reply(policy: Policy) -> None:
    for row in TEXT_ROWS:
        for seed in range(30):
            req = body(row.id, seed)
            mode = policy.expected_mode(row, req["messages"][0]["content"], seed)
            decision = policy.decide(req)
            assert decision.kind == "answer" and decision.mode == mode and decision.row_id == row.id
            text = policy.respond(req)["choices"][0]["message"]["content"]
            from core.models import AgentOutput
            score = BENCH.score(row, AgentOutput(text=text))
            assert (score.value == 1.0) == (mode is None)


def test_expected_mode_is_first_unremedied_mode_under_its_rate(policy: Policy) -> None:
    row = ROWS[0]
    for seed in range(50):
        draws = [(m, mode_draw(row.id, seed, m.name)) for m in BENCH.failure_modes]
        first = next((m.name for m, u in draws if u < m.rate), None)
        assert policy.expected_mode(row, CONTRACT_MARKER, seed) == first


def test_accuracy_rises_monotonically_with_remedies(policy: Policy) -> None:
    prompts = ["", FORMAT.remedy, f"{FORMAT.remedy}\n{ARITH.remedy}",
               f"{FORMAT.remedy}\n{ARITH.remedy}\n{TOOL.remedy.upper()}"]  # remedy check is case-insensitive
    correct_sets = []
    for extra in prompts:
        system = f"{CONTRACT_MARKER}\n{extra}"
        correct_sets.append({(r.id, s) for r in ROWS for s in range(40) if policy.expected_mode(r, system, s) is None})
    for smaller, larger in zip(correct_sets, correct_sets[1:]):
        assert smaller <= larger
    assert len(correct_sets[0]) < len(correct_sets[1]) < len(correct_sets[2]) < len(correct_sets[3])
    assert len(correct_sets[3]) == len(ROWS) * 40


def test_tool_row_answers_with_a_tool_call(policy: Policy) -> None:
    seed = next(s for s in range(100) if policy.expected_mode(ROWS[-1], CONTRACT_MARKER, s) is None)
    req = body("t1", seed)
    req["tools"] = BENCH.native_tools(ROWS[-1])
    out = policy.respond(req)
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "calculator"
    assert json.loads(call["function"]["arguments"]) == {"expression": "21+34"}
    assert call["id"].startswith("call_") and call["id"] == policy.respond(req)["choices"][0]["message"]["tool_calls"][0]["id"]


def test_tool_result_gets_done_and_no_tool_calls(policy: Policy) -> None:
    req = body("t1", 1)
    req["messages"] += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "55"}]
    message = policy.respond(req)["choices"][0]["message"]
    assert message["content"] == "Done." and "tool_calls" not in message
    assert policy.respond(req)["choices"][0]["finish_reason"] == "stop"


def test_non_answering_role_gets_analysis_note(policy: Policy) -> None:
    req = {"model": "qwen", "seed": 3, "messages": [{"role": "system", "content": "You are the planner."},
                                                     {"role": "user", "content": "Compute 7 + 5."}]}
    decision = policy.decide(req)
    assert decision.kind == "analysis" and "r2" in (decision.reply.content or "")
    assert not decision.reply.tool_calls


def test_stage_prompt_embedding_the_task_matches_by_substring(policy: Policy) -> None:
    messages = answering_messages("r3", task_prefix="Previous stage said: hello.\n\nTask:\n")
    assert policy.lookup(messages).row.id == "r3"
    parts = [{"role": "system", "content": CONTRACT_MARKER},
             {"role": "user", "content": [{"type": "text", "text": "Context first."},
                                          {"type": "text", "text": "Compute 11 + 4."}]}]
    assert policy.lookup(parts).row.id == "r3"


def test_unmatched_request_gets_no_matching_task(policy: Policy) -> None:
    out = policy.respond({"model": "qwen", "messages": [{"role": "user", "content": "hello"}]})
    assert out["choices"][0]["message"]["content"] == NO_MATCH_TEXT


def test_response_shape_and_labels(policy: Policy) -> None:
    req = body("r1", 5)
    out = policy.respond(req)
    assert out["object"] == "chat.completion" and out["model"] == "simulated/qwen"
    assert out["system_fingerprint"] == "mpb-simulated-endpoint"
    assert out["simulated"] is True and "not model scores" in out["simulated_note"]
    text = "".join(m["content"] for m in req["messages"])
    assert out["usage"]["prompt_tokens"] == len("\n".join(m["content"] for m in req["messages"])) // 4
    assert out["usage"]["total_tokens"] == out["usage"]["prompt_tokens"] + out["usage"]["completion_tokens"]
    assert text


def reflection_body(instruction: str, feedback: str, model: str = "simulated-reflection") -> dict:
    prompt = (f"<current_instruction>{instruction}</current_instruction>\n"
              f"Examples with feedback:\n{feedback}\nWrite a better instruction in a ``` block.")
    return {"model": model, "messages": [{"role": "user", "content": prompt}]}


def test_reflection_appends_remedies_named_by_feedback(policy: Policy) -> None:
    fb = "Example 1: The reply is missing the 'Answer:' line.\nExample 2: Wrong total: an arithmetic slip."
    out = policy.respond(reflection_body("Solve the sum.", fb))
    content = out["choices"][0]["message"]["content"]
    assert content == f"```\nSolve the sum.\n{FORMAT.remedy}\n{ARITH.remedy}\n```"
    assert out["model"] == "simulated/simulated-reflection"
    assert policy.respond(reflection_body("Solve the sum.", fb)) == out


def test_reflection_does_not_repeat_a_present_remedy(policy: Policy) -> None:
    fb = "missing the 'Answer:' line; did not call the calculator"
    content = policy.respond(reflection_body(f"Solve.\n{FORMAT.remedy}", fb))["choices"][0]["message"]["content"]
    assert content == f"```\nSolve.\n{FORMAT.remedy}\n{TOOL.remedy}\n```"
    assert content.count(FORMAT.remedy) == 1


def test_reflection_model_id_is_configurable() -> None:
    from tests.engine.sim.fake_benchmark import make_policy

    custom = make_policy(reflection_model="my-reflector")
    fb = "arithmetic slip"
    assert ARITH.remedy in custom.respond(reflection_body("X", fb, model="my-reflector"))["choices"][0]["message"]["content"]
    assert custom.decide(reflection_body("X", fb, model="simulated-reflection")).kind == "no_match"


def test_expected_mode_rejects_unknown_rows(policy: Policy) -> None:
    from core.models import Row

    with pytest.raises(KeyError):
        policy.expected_mode(Row(id="zz", dataset="other", task={}), "", 0)


def test_tool_calls_are_sent_only_when_tools_are_offered(policy: Policy) -> None:
    seed = next(s for s in range(100) if policy.expected_mode(ROWS[-1], CONTRACT_MARKER, s) is None)
    plain = policy.respond(body("t1", seed))["choices"][0]
    assert "tool_calls" not in plain["message"] and plain["finish_reason"] == "stop"
    assert plain["message"]["content"] == ""
    declined = body("t1", seed)
    declined.update(tools=BENCH.native_tools(ROWS[-1]), tool_choice="none")
    assert "tool_calls" not in policy.respond(declined)["choices"][0]["message"]
