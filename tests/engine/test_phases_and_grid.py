"""`--phase`, `--allow-any-cell`, the tables a job claims (section 4) and the forced-fallback scores."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.cell import grid_tables, parse_cell
from core.errors import UsageError
from core.models import RolloutRecord, RolloutStatus
from core.selection import decide
from tests.conftest import start_sim
from tests.engine.jobutil import comparable
from tests.optimizers.optjob import bench, read, run

ROOT = Path(__file__).resolve().parents[2]
IMPLEMENTED = ("identity", "gepa", "mipro")


def engine(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
def test_phases_one_at_a_time_equal_one_full_run(tmp_path):
    server = start_sim(bench())
    try:
        full = run(tmp_path / "full", server.base_url, method="gepa", budget=120)
        staged = tmp_path / "staged"
        first = run(staged, server.base_url, method="gepa", budget=120, phase="optimize")
        assert first["status"] == "phase_completed" and first["phase"] == "optimize"
        assert (staged / "optimization.json").exists() and not (staged / "selection.json").exists()
        second = run(staged, server.base_url, method="gepa", budget=120, phase="validate")
        assert second["phase"] == "validate" and second["selection_id"]
        assert (staged / "selection.json").exists() and not (staged / "test.json").exists()
        third = run(staged, server.base_url, method="gepa", budget=120, phase="test")
    finally:
        server.stop()
    assert comparable(third) == comparable(full)
    for name in ("optimization.json", "selection.json", "test.json"):
        assert read(staged, name) == read(tmp_path / "full", name), name


@pytest.mark.parametrize("phase,needs", [("validate", "optimization.json"), ("test", "selection.json")])
def test_a_phase_without_its_input_is_refused_before_anything_is_written(tmp_path, phase, needs):
    out = tmp_path / "job"
    server = start_sim(bench())
    try:
        with pytest.raises(UsageError, match=f"--phase {phase} needs {needs}"):
            run(out, server.base_url, method="identity", phase=phase)
    finally:
        server.stop()
    assert not out.exists()


@pytest.mark.slow
def test_cli_phase_choices_are_checked():
    proc = engine("job", "--cell", "task=bfcl,topology=single", "--method", "identity", "--out", "x",
                  "--phase", "deploy")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "--phase" in proc.stderr


@pytest.mark.slow
def test_off_grid_cell_is_refused_without_the_flag(tmp_path):
    out = tmp_path / "job"
    proc = engine("job", "--cell", "task=gpqa,topology=independent,model=llama", "--method", "gepa", "--out",
                  str(out))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "--allow-any-cell" in proc.stderr
    assert not out.exists()


def test_off_grid_cell_runs_with_the_flag_and_is_non_conformant(tmp_path):
    fake = bench()
    fake.name = "gpqa"  # type: ignore[misc]  # the gpqa team spec; fake sum rows
    server = start_sim(fake)
    try:
        result = run(tmp_path / "job", server.base_url, fake=fake, method="identity", allow_any_cell=True,
                     cell="task=gpqa,topology=independent,model=llama")
    finally:
        server.stop()
    job = read(tmp_path / "job", "job.json")
    assert job["in_grid"] is False and job["source_tables"] == [] and result["source_tables"] == []
    assert "off_grid_cell" in job["nonconformance_reasons"] and result["protocol_conformant"] is False


@pytest.mark.parametrize("method,cell,tables", [
    ("gepa", "task=gpqa,topology=single,framework=langgraph", [2, 3]),
    ("mipro", "task=hotpotqa,topology=independent,framework=langgraph", [2, 3, 4, 5, 6, 7]),
    ("gepa", "task=hotpotqa,topology=single,framework=langgraph,model=llama", [7]),
    ("gepa", "task=lcb,topology=centralized,framework=langgraph,team_size=8", [5]),
    ("gepa", "task=bfcl,topology=sequential,framework=langgraph,communication=structured_soft", [4]),
    ("identity", "task=hotpotqa,topology=independent,framework=langgraph", [2, 3, 4, 5, 6, 7]),
    ("identity", "task=gpqa,topology=single,framework=langgraph", [2, 3]),
    ("gepa", "task=gpqa,topology=sequential,framework=crewai", [2]),
    ("mipro", "task=math,topology=centralized,framework=autogen", [2]),
    ("gepa", "task=bfcl,topology=decentralized,framework=openai_agents", [2]),
    # the engine's own runtime claims no table, even on a grid cell
    ("gepa", "task=gpqa,topology=single", []),
    ("mipro", "task=hotpotqa,topology=independent", []),
    # methods of the grid this engine does not implement claim nothing, even on their own cells
    ("hivemind", "task=lcb,topology=independent,framework=langgraph", []),
    ("gepa", "task=gpqa,topology=independent,framework=langgraph,model=llama", []),  # table 7: application tasks
])
def test_claimed_tables(method, cell, tables):
    claimed = grid_tables(method, parse_cell(cell), IMPLEMENTED)
    assert claimed == tables


def _records(scores: list[float], status: RolloutStatus = RolloutStatus.SUCCESS) -> list[RolloutRecord]:
    return [RolloutRecord(rollout_id=f"r{i}", example_id=f"v{i}", phase="validation",
                          status=status if s >= 1 else RolloutStatus.SEMANTIC_FAILURE, score=s, request_seed=i,
                          bundle_sha256="b", attempts=1) for i, s in enumerate(scores)]


@pytest.mark.parametrize("infra_invalid,reportable,incumbent_valid,reason", [
    (True, True, True, "infrastructure_invalid_optimization"),
    (False, False, True, "infrastructure_invalid_optimization"),
    (False, True, False, "invalid_incumbent_bundle"),
])
def test_forced_fallback_nulls_only_incumbent_score_and_delta(infra_invalid, reportable, incumbent_valid, reason):
    seed = _records([1.0, 0.0, 1.0, 1.0])
    decision = decide(ordered_ids=[r.example_id for r in seed], seed_records=seed, incumbent_records=None,
                      optimization_reportable=reportable, optimization_infra_invalid=infra_invalid,
                      incumbent_valid=incumbent_valid)
    assert decision.selected_candidate == "seed" and decision.fallback_reason == reason
    assert decision.baseline_score == 0.75
    assert decision.incumbent_score is None and decision.validation_delta is None


def test_unusable_incumbent_record_keeps_the_baseline_score():
    seed = _records([1.0, 0.0])
    broken = _records([1.0, 1.0])
    broken[1] = broken[1].model_copy(update={"status": RolloutStatus.INFRASTRUCTURE_FAILURE, "score": None})
    decision = decide(ordered_ids=["v0", "v1"], seed_records=seed, incumbent_records=broken,
                      optimization_reportable=True, optimization_infra_invalid=False, incumbent_valid=True)
    assert decision.fallback_reason.startswith("invalid_record:v1")
    assert decision.baseline_score == 0.5 and decision.incumbent_score is None and decision.validation_delta is None


def test_tool_environment_enters_the_condition_and_conformance(tmp_path):
    class PooledLike(type(bench())):  # type: ignore[misc]
        def tool_environment(self) -> dict:
            return {"hotpotqa_retrieval": "pooled", "conformant": False, "corpus": "pooled:3:abc"}

    fake = PooledLike(n_train=12, n_validation=20, n_test=30)
    server = start_sim(fake)
    try:
        run(tmp_path / "job", server.base_url, fake=fake, method="identity")
    finally:
        server.stop()
    job = read(tmp_path / "job", "job.json")
    assert job["condition"]["tool_environment"]["hotpotqa_retrieval"] == "pooled"
    assert job["condition"]["output_contract_version"] == 2
    assert "tool_environment_not_conformant" in job["nonconformance_reasons"]
