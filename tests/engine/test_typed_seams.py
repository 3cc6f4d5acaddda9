"""Typed seams (issue 36, item 3): `run_job` returns core.artifacts.JobResult, which the sweep picks apart by
attribute and Ray pickles; the summary line reads the same fields it printed from the dict."""

from __future__ import annotations

import pickle
import random

from core.artifacts import JobResult
from engine.aggregate.synthetic import synthetic_result
from engine.job.run_job import summary_line
from engine.sweep.jobcall import headline

GRID = {"task": "bfcl", "topology": "single", "framework": "langgraph", "communication": "freeform",
        "team_size": 1, "task_model": "qwen", "method": "gepa"}


def a_result() -> JobResult:
    return JobResult.model_validate(synthetic_result(GRID, 0, n_items=20, rng=random.Random(3), valid=True))


def test_a_job_result_survives_pickling_as_ray_sends_it():
    result = a_result()
    again = pickle.loads(pickle.dumps(result))
    assert again == result and again.to_json() == result.to_json()


def test_headline_and_summary_line_read_the_typed_result():
    result = a_result()
    data = result.to_json()
    assert headline(result) == {"baseline_mean": data["test"]["baseline_mean"],
                                "deployed_mean": data["test"]["deployed_mean"], "delta_pp": data["test"]["delta_pp"],
                                "fallback_reason": data["selection"]["fallback_reason"],
                                "charged": data["optimization"]["budget"]["charged"]}
    line = summary_line(result, smoke=2)
    assert line == {"smoke": 2, "status": "completed", "cell_id": data["cell_id"],
                    "baseline_mean": data["test"]["baseline_mean"], "deployed_mean": data["test"]["deployed_mean"],
                    "delta_pp": data["test"]["delta_pp"], "valid_for_aggregation": True,
                    "fallback_reason": data["selection"]["fallback_reason"], "charged": 600,
                    "failure_counts": data["test"]["failure_counts"], "protocol_conformant": True,
                    "endpoint_kind": None}
