"""GEPA's reflective dataset as protocol-v1 section 8.1 lists it, read from the reflection prompts a real GEPA job
recorded (independent topology on the simulated endpoint): the reflected role's own output, the vote summary and
the scorer's feedback; plus the LCB input compaction."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from core.models import AgentOutput, RolloutRecord, RolloutStatus, Row
from optimizers.reflective_dataset import INPUT_CHARS, OUTPUT_CHARS, STARTER_CHARS, output_text, task_text
from tests.conftest import start_sim
from tests.fakebench import FakeBench
from tests.optimizers.optjob import run


def reflection_prompts(db: Path) -> list[str]:
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT payload FROM events WHERE event_type='model_call'").fetchall()
    finally:
        conn.close()
    prompts = []
    for (payload,) in rows:
        data = json.loads(payload)
        if data.get("component") == "reflection" and data.get("purpose") == "gepa.mutation":
            prompts.append(data["request"]["messages"][-1]["content"])
    return prompts


@pytest.mark.slow
def test_gepa_reflection_prompts_show_role_output_vote_summary_and_feedback(tmp_path):
    bench = FakeBench(n_train=12, n_validation=10, n_test=6)
    bench.name = "gpqa"  # type: ignore[misc]  # the gpqa team spec (independent role `solver`); fake sum rows
    server = start_sim(bench)
    try:
        run(tmp_path / "job", server.base_url, fake=bench, method="gepa", budget=100,
            cell="task=gpqa,topology=independent")
    finally:
        server.stop()
    prompts = reflection_prompts(tmp_path / "job" / "card.sqlite")
    assert prompts, "GEPA never reflected"
    for prompt in prompts:
        examples = prompt.split("# Example ")[1:]
        assert examples
        for example in examples:
            outputs = example.split("## Generated Outputs\n", 1)[1].split("## Score", 1)[0]
            assert "vote summary: winner" in outputs and "of 4)" in outputs
            assert "output of the 'solver' agent:\n" in outputs
            feedback = example.split("## Feedback\n", 1)[1]
            assert feedback.strip() and ("Correct." in feedback or "error" in feedback or "format" in feedback)


def _record(text: str, metadata: dict) -> RolloutRecord:
    return RolloutRecord(rollout_id="r", example_id="x", phase="optimize", status=RolloutStatus.SEMANTIC_FAILURE,
                         score=0.0, feedback="Wrong.", final_output=AgentOutput(text=text, metadata=metadata),
                         request_seed=1, bundle_sha256="b", attempts=1)


def test_role_output_is_cut_to_1200_chars_head_and_tail():
    own = "H" * 2000 + "T" * 2000
    text = output_text(_record("Answer: 1", {"role_outputs": {"critic": own, "writer": "w"}}), role="critic")
    section = text.split("output of the 'critic' agent:\n", 1)[1]
    assert len(section) <= OUTPUT_CHARS and section.startswith("H") and section.endswith("T")
    assert "'writer'" not in text
    assert "vote summary" not in text  # no vote, no summary line


def test_lcb_inputs_are_compacted():
    row = Row(id="1873_A", dataset="lcb",
              task={"question_title": "T", "question_content": "p" * 5000 + "q" * 5000,
                    "starter_code": "s" * 4000 + "e" * 4000, "mode": "functional", "platform": "leetcode",
                    "difficulty": "easy", "contest_date": ""},
              gold={"private_tests": [{"input": "SECRET-INPUT", "output": "SECRET-OUTPUT"}] * 7})
    text = task_text(row)
    problem = text.split("problem:\n", 1)[1].split("\nstarter code:\n", 1)[0]
    starter = text.split("\nstarter code:\n", 1)[1].split("\nhidden tests:", 1)[0]
    assert len(problem) <= INPUT_CHARS and problem.startswith("p") and problem.endswith("q")
    assert len(starter) <= STARTER_CHARS and starter.startswith("s") and starter.endswith("e")
    assert "hidden tests: 7 (not shown)" in text and "SECRET" not in text
