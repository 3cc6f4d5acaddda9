"""Synthetic job results, built as core.artifacts.JobResult (for tests, the bench and demos).

``grid_cells()`` enumerates the 612 conformant v1 grid configurations of protocol 4 (1,836 jobs over seeds);
``synthetic_result`` builds one seed's result.json content with random paired 0/1 test scores;
``write_job`` stores it at ``ROOT/<method>/<task>/<registry key>/<model>/<seed>/result.json``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from core.artifacts import (
    ArmCounts,
    BudgetSnapshot,
    CellFields,
    FailureCounts,
    GridCell,
    JobResult,
    ResultHeldOut,
    ResultOptimization,
    ResultSelection,
)
from core.grid import grid_configurations, registry_key
from core.models import Cell
from core.protocol import PROTOCOL_ID

GRID_FIELDS = ("method", "task", "topology", "framework", "communication", "team_size", "task_model")


def grid_cells() -> list[dict[str, Any]]:
    """The 612 conformant grid configurations (method, task, topology, framework, communication, size, model),
    each with its registry key and source tables: core/grid.py `grid_configurations`, the grid's one source."""
    out = []
    for method, cell, tables in grid_configurations():
        values = (method, cell.task, cell.topology, cell.framework, cell.communication, cell.team_size,
                  cell.task_model)
        out.append({"grid": dict(zip(GRID_FIELDS, values)), "source_tables": list(tables),
                    "registry_key": registry_key(cell)})
    return sorted(out, key=lambda e: (e["grid"]["task_model"] != "qwen", e["grid"]["task"], e["registry_key"],
                                      e["grid"]["method"]))


def synthetic_result(
    grid: dict[str, Any],
    seed: int,
    *,
    n_items: int = 100,
    rng: random.Random,
    registry: str | None = None,
    source_tables: list[int] | None = None,
    example_ids: list[str] | None = None,
    valid: bool = True,
    conformant: bool = True,
    failure_counts: bool = True,
    baseline_rate: float | None = None,
    gain: float | None = None,
    endpoint_kind: str | None = None,
) -> dict[str, Any]:
    """One seed's result.json content with random paired binary test scores."""
    ids = example_ids if example_ids is not None else [f"{grid['task']}-{i:04d}" for i in range(n_items)]
    rate = rng.uniform(0.2, 0.8) if baseline_rate is None else baseline_rate
    lift = rng.uniform(-0.05, 0.15) if gain is None else gain
    baseline = [1 if rng.random() < rate else 0 for _ in ids]
    deployed = [b if rng.random() > abs(lift) + 0.1 else (1 if rng.random() < rate + lift else 0) for b in baseline]
    fallback = rng.random() < 0.3
    if fallback:
        deployed = list(baseline)
    infra = rng.randrange(3)
    base_mean, dep_mean = sum(baseline) / len(ids), sum(deployed) / len(ids)
    counts = {
        arm: {"n": len(ids), "usable": len(ids), "success": sum(scores),
              "semantic_failures": len(ids) - sum(scores), "infrastructure_failures": infra if arm == "baseline" else 0,
              "budget_exhausted": 0, "skipped": 0}
        for arm, scores in (("baseline", baseline), ("deployed", deployed))
    }
    fields = {k: grid[k] for k in ("task", "topology", "framework", "communication", "team_size", "task_model")}
    cell = CellFields(**fields)
    result = JobResult(
        schema="mas-promptbench-job-result/v1", status="completed", protocol_id=PROTOCOL_ID,
        protocol_conformant=conformant, cell=cell, cell_id=f"synthetic-{rng.getrandbits(48):012x}",
        method=grid["method"], optimizer_seed=seed, grid_cell=GridCell(**grid),
        registry_key=registry or registry_key(Cell(**fields)),
        source_tables=source_tables or [3], condition_id="synthetic", endpoint_kind=endpoint_kind,
        optimization=ResultOptimization(
            status="completed", failure_kind=None, stop_reason="rollout_budget_spent",
            budget=BudgetSnapshot(maximum=600, charged=600, reserved=0, remaining=0, attempted=600 + infra,
                                  successful=400, semantic_failures=200, infrastructure_failures=infra,
                                  retries=infra),
            usage={}, elapsed_seconds=1.0),
        selection=ResultSelection(
            selection_id="synthetic", selected_candidate="seed" if fallback else "incumbent",
            fallback_reason="validation_tie" if fallback else None, baseline_validation_score=0.5,
            incumbent_validation_score=0.5 if fallback else 0.56, validation_delta=0.0 if fallback else 0.06),
        test=ResultHeldOut(
            example_ids=ids, baseline_scores=[float(b) for b in baseline],
            deployed_scores=[float(d) for d in deployed], valid_for_aggregation=valid,
            baseline_mean=base_mean, deployed_mean=dep_mean,
            delta_pp=100.0 * (dep_mean - base_mean) if valid else None,
            **({"failure_counts": ArmCounts(baseline=FailureCounts(**counts["baseline"]),
                                            deployed=FailureCounts(**counts["deployed"]))} if failure_counts else {})))
    return result.to_json()


def job_dir(root: Path, result: dict[str, Any]) -> Path:
    grid = result["grid_cell"]
    runtime = result["registry_key"]
    if grid["framework"] != "langgraph" and not runtime.endswith(grid["framework"]):
        runtime = f"{runtime}_{grid['framework']}"  # native and LangGraph runs of one registry key apart
    return (Path(root) / grid["method"] / grid["task"] / runtime / grid["task_model"]
            / str(result["optimizer_seed"]))


def write_job(root: Path, result: dict[str, Any], *, directory: Path | None = None,
              learning_curve: list[dict[str, Any]] | None = None) -> Path:
    """Write result.json (and optionally optimization/learning_curve.jsonl); returns the result.json path."""
    target = directory if directory is not None else job_dir(root, result)
    target.mkdir(parents=True, exist_ok=True)
    path = target / "result.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    if learning_curve is not None:
        (target / "optimization").mkdir(exist_ok=True)
        (target / "optimization" / "learning_curve.jsonl").write_text(
            "".join(json.dumps(row) + "\n" for row in learning_curve), encoding="utf-8")
    return path
