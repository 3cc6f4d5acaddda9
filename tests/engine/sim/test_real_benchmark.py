"""The policy over a real registered benchmark (BFCL): skipped when the data layer is not available."""

from __future__ import annotations

import pytest

from core.errors import DataError, UsageError
from core.models import AgentOutput
from engine.sim.build import all_split_ids, build_policy
from engine.sim.policy import CONTRACT_MARKER


@pytest.fixture(scope="module")
def bfcl():
    pytest.importorskip("benchmarks.registry")
    try:
        policy = build_policy(["bfcl"], None, "simulated-reflection")
    except (UsageError, DataError) as exc:
        pytest.skip(f"BFCL not available: {exc}")
    return policy


def test_bfcl_policy_loads_every_split_row(bfcl) -> None:
    benchmark = bfcl.benchmarks["bfcl"]
    assert bfcl.row_count == len(all_split_ids(benchmark)) > 0


def test_bfcl_answers_are_scored_as_expected_mode_predicts(bfcl) -> None:
    benchmark = bfcl.benchmarks["bfcl"]
    rows = benchmark.load_rows(list(benchmark.splits().train[:8]))
    system = f"{CONTRACT_MARKER}\n{benchmark.contract(1)}"
    for row in rows:
        for seed in range(4):
            for with_tools in (True, False):
                req = {"model": "qwen", "seed": seed,
                       "messages": [{"role": "system", "content": system},
                                    {"role": "user", "content": benchmark.render_task(row)}]}
                if with_tools:
                    req["tools"] = benchmark.native_tools(row)
                message = bfcl.respond(req)["choices"][0]["message"]
                calls = tuple({"id": c["id"], "type": "function", "function": c["function"]}
                              for c in message.get("tool_calls", ()))
                score = benchmark.score(row, AgentOutput(text=message["content"], tool_calls=calls))
                mode = bfcl.expected_mode(row, system, seed)
                assert (score.value == 1.0) == (mode is None), (row.id, seed, mode, score.feedback)


def test_bfcl_reflection_reads_scorer_feedback(bfcl) -> None:
    benchmark = bfcl.benchmarks["bfcl"]
    mode = benchmark.failure_modes[0]
    row = benchmark.load_rows([benchmark.splits().train[0]])[0]
    wrong = benchmark.simulate(row, mode.name, __import__("random").Random(0))
    feedback = benchmark.score(row, AgentOutput(text=wrong.content)).feedback
    req = {"model": "simulated-reflection", "messages": [{"role": "user", "content":
           f"<current_instruction>Call the functions.</current_instruction>\nFeedback: {feedback}"}]}
    assert mode.remedy in bfcl.respond(req)["choices"][0]["message"]["content"]
