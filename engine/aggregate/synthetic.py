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

PRIMARY = ("gepa", "mipro", "mapro", "maspo")
EXTRA = ("hivemind", "mamut_gepa", "maspob", "tavo")
TASKS = ("gpqa", "hotpotqa", "math", "bfcl", "apibank", "toolhop", "lcb", "apps", "swe")
APPLICATION = ("hotpotqa", "lcb", "bfcl")
TOPOLOGIES = ("single", "independent", "sequential", "centralized", "decentralized")
MULTI_AGENT = TOPOLOGIES[1:]
NATIVE = {"single": "langgraph", "independent": "langgraph", "sequential": "crewai", "centralized": "autogen",
          "decentralized": "openai_agents"}
COMMUNICATIONS = ("freeform", "semi_structured", "structured")


def registry_key(topology: str, framework: str, communication: str, team_size: int) -> str:
    if framework != "langgraph":
        return f"{topology}_{framework}"
    if communication != "freeform":
        return f"{topology}_communications_{communication}"
    if topology != "single" and team_size != 4:
        return f"{topology}_r{team_size}"
    return topology


def _methods_for(topology: str, methods: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(m for m in methods if topology != "single" or m in ("gepa", "mipro"))


def grid_cells() -> list[dict[str, Any]]:
    """The 612 conformant grid configurations (method, task, topology, framework, communication, size, model)."""
    cells: dict[tuple, dict[str, Any]] = {}

    def add(method: str, task: str, topology: str, framework: str, communication: str, size: int,
            model: str, table: int) -> None:
        size = 1 if topology == "single" else size
        key = (method, task, topology, framework, communication, size, model)
        entry = cells.setdefault(key, {"grid": dict(zip(
            ("method", "task", "topology", "framework", "communication", "team_size", "task_model"), key)),
            "source_tables": []})
        entry["source_tables"].append(table)

    for task in TASKS:
        for topology in TOPOLOGIES:
            for method in _methods_for(topology, PRIMARY):
                add(method, task, topology, NATIVE[topology], "freeform", 4, "qwen", 2)
                add(method, task, topology, "langgraph", "freeform", 4, "qwen", 3)
    for task in APPLICATION:
        for topology in MULTI_AGENT:
            for method in PRIMARY:
                for communication in COMMUNICATIONS:
                    add(method, task, topology, "langgraph", communication, 4, "qwen", 4)
                for size in (2, 4, 8, 10):
                    add(method, task, topology, "langgraph", "freeform", size, "qwen", 5)
        for topology in TOPOLOGIES:
            for method in _methods_for(topology, PRIMARY + EXTRA):
                add(method, task, topology, "langgraph", "freeform", 4, "qwen", 6)
            for method in _methods_for(topology, PRIMARY):
                add(method, task, topology, "langgraph", "freeform", 4, "llama", 7)
    out = []
    for entry in cells.values():
        grid = entry["grid"]
        entry["registry_key"] = registry_key(grid["topology"], grid["framework"], grid["communication"],
                                             grid["team_size"])
        entry["source_tables"] = sorted(set(entry["source_tables"]))
        out.append(entry)
    return out


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
    base_mean = sum(baseline) / len(ids)
    dep_mean = sum(deployed) / len(ids)
    counts = {
        arm: {"n": len(ids), "usable": len(ids), "success": sum(scores),
              "semantic_failures": len(ids) - sum(scores), "infrastructure_failures": infra if arm == "baseline" else 0,
              "budget_exhausted": 0, "skipped": 0}
        for arm, scores in (("baseline", baseline), ("deployed", deployed))
    }
    cell = CellFields(**{k: grid[k] for k in ("task", "topology", "framework", "communication", "team_size",
                                               "task_model")})
    result = JobResult(
        schema="mas-promptbench-job-result/v1", status="completed", protocol_id="mas-promptbench-v1",
        protocol_conformant=conformant, cell=cell, cell_id=f"synthetic-{rng.getrandbits(48):012x}",
        method=grid["method"], optimizer_seed=seed, grid_cell=GridCell(**grid),
        registry_key=registry or registry_key(grid["topology"], grid["framework"], grid["communication"],
                                              grid["team_size"]),
        source_tables=source_tables or [3], condition_id="synthetic",
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
    return (Path(root) / grid["method"] / grid["task"] / result["registry_key"] / grid["task_model"]
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
