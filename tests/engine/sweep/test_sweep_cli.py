"""`sweep` bad input: one line on stderr, exit 2, nothing written; `plan` prints counts and cost."""

from __future__ import annotations

import json

import pytest

from core.cell import parse_cell
from tests.engine.sweep.sweeputil import SELECTION, sweep

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")


@pytest.mark.parametrize("args,words", [
    (["--task-endpoint", "http://127.0.0.1:9/v1", "--model-id", "m"], "start-up check"),
    (["--model-id", "m"], "no task endpoint"),
    (["--task-endpoint", "http://127.0.0.1:9/v1"], "--model-id"),
    (["--simulated", "--methods", "nope"], "unknown method"),
    (["--simulated", "--limit", "0"], "--limit"),
    (["--simulated", "--tasks", "bfcl", "--models", "llama", "--team-sizes", "8"], "no job"),
    (["--endpoints-file", "/nonexistent/endpoints.txt", "--model-id", "m"], "endpoints-file"),
    (["--simulated", "--task-endpoint", "http://127.0.0.1:9/v1"], "--simulated starts the built-in simulated "
                                                                  "endpoint: it contradicts --task-endpoint"),
    (["--simulated", "--model-id", "Qwen/Qwen3.5-9B"], "contradicts --model-id"),
    (["--simulated", "--endpoints-file", "/nonexistent/e.txt"], "contradicts --endpoints-file"),
    (["--task-endpoint", "http://127.0.0.1:9/v1", "--model-id", "m", "--sim-delay-ms", "5"], "add --simulated"),
    (["--simulated", "--address", "local"], "--executor ray only"),
    (["--simulated", "--data-dir", "bfcl=/nonexistent/bfcl"], "is not a directory"),
    (["--simulated", "--data-dir", "nope=/tmp"], "unknown task 'nope'"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, words):
    base = [a for a in SELECTION if a not in ("--methods", "gepa,identity")] if "--methods" in args else SELECTION
    if "--tasks" in args:
        base = []
    proc = sweep("run", "--sweep-dir", str(tmp_path / "sw"), *base, *args, "--startup-timeout", "2")
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and words in proc.stderr, proc.stderr
    assert not (tmp_path / "sw").exists()


def test_a_sweep_dir_keeps_its_job_settings(tmp_path):
    first = sweep("run", "--sweep-dir", str(tmp_path / "sw"), "--runtime", "native", "--tasks", "bfcl", "--methods", "identity",
                  "--topologies", "single", "--table", "3", "--seeds", "0", "--simulated", "--no-aggregate")
    assert first.returncode == 0, first.stderr
    other = sweep("run", "--sweep-dir", str(tmp_path / "sw"), "--runtime", "native", "--tasks", "bfcl", "--methods", "identity",
                  "--topologies", "single", "--table", "3", "--seeds", "0", "--simulated", "--budget", "10",
                  "--no-aggregate")
    assert other.returncode == 2 and "other job settings" in other.stderr
    again = sweep("run", "--sweep-dir", str(tmp_path / "sw"), "--runtime", "native", "--tasks", "bfcl", "--methods", "identity",
                  "--topologies", "single", "--table", "3", "--seeds", "0", "--simulated", "--no-aggregate")
    assert again.returncode == 0 and "1 already finished, 0 to run" in again.stderr


def test_plan_lists_not_implemented_cells_and_counts(tmp_path):
    proc = sweep("plan", "--runtime", "native", "--tasks", "lcb", "--table", "2", "--json")
    doc = json.loads(proc.stdout)
    assert doc["counts"] == {"jobs": 54, "runnable": 18, "not_implemented": 36}
    assert {j["key"].split("/")[2] for j in doc["jobs"] if not j["runnable"]} == {
        "sequential_crewai", "centralized_autogen", "decentralized_openai_agents"}
    assert doc["cost"]["rollouts"] > 0 and doc["cost"]["model_calls"] >= doc["cost"]["rollouts"]
    text = sweep("plan", "--runtime", "native", "--tasks", "lcb", "--table", "2")
    assert "54 jobs: 18 runnable, 36 not implemented" in text.stdout and "SKIP" in text.stdout
    assert "plan gepa:" in text.stdout


def test_plan_on_the_framework_runtimes_runs_table_2_with_its_frameworks(tmp_path):
    doc = json.loads(sweep("plan", "--tasks", "lcb", "--table", "2", "--json").stdout)
    assert doc["counts"] == {"jobs": 54, "runnable": 54, "not_implemented": 0}  # CI installs every extra
    frameworks = {j["key"].split("/")[2]: parse_cell(j["cell"]).framework for j in doc["jobs"]}
    assert frameworks == {"single": "langgraph", "independent": "langgraph", "sequential_crewai": "crewai",
                          "centralized_autogen": "autogen", "decentralized_openai_agents": "openai_agents"}


GRID_CASES = [
    ({"jobs": [{"method": "gepa", "cell": "task=bfcl,topology=single", "seed": [0]}]}, "unknown field 'seed'"),
    ({"jobs": [], "job": []}, "unknown field 'job'"),
    ({"jobs": [{"method": "gepa", "cell": "task=bfcl,topology=single,,,"}]}, "empty --cell part"),
    ({"jobs": [{"method": "gepa", "cell": "task=bfcl,topology=single", "data_dir": "/nonexistent/d"}]},
     "data_dir /nonexistent/d is not a directory"),
    ({"jobs": [{"method": "gepa", "cell": "task=bfcl,topology=single", "allow_any_cell": "yes"}]},
     "allow_any_cell must be true or false"),
    ({"jobs": [{"method": "gepa", "cell": "task=bfcl,topology=single", "seeds": [True]}]}, "seeds must be among"),
    ({"jobs": ["gepa"]}, "not an object"),
    ({"jobs": [{"cell": "task=bfcl,topology=single"}]}, "method must be a non-empty string"),
]


@pytest.mark.parametrize("doc,words", GRID_CASES, ids=[c[1] for c in GRID_CASES])
@pytest.mark.parametrize("command", ["run", "plan"])
def test_bad_grid_files_are_refused_before_anything_runs(tmp_path, doc, words, command):
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps(doc))
    extra = ["--sweep-dir", str(tmp_path / "sw"), "--simulated"] if command == "run" else []
    proc = sweep(command, "--grid-file", str(grid), *extra)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and words in proc.stderr, proc.stderr
    assert not (tmp_path / "sw").exists()
