"""Per-cell paired summaries over optimizer seeds 0/1/2 and Holm-adjusted per-seed McNemar p-values (protocol 5.8).

A cell is summarized across seeds only when it is complete: seeds 0, 1, 2 each present once, every test phase
valid for aggregation, identical example-ID sets. Otherwise it is reported ``incomplete`` with its problems and
nothing is averaged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from core.protocol import PROTOCOL_ID
from core.statistics import (
    discordant_pairs,
    exact_mcnemar_p,
    holm_adjust,
    mean,
    paired_bootstrap_ci,
    sample_std,
)
from engine.aggregate.discovery import GRID_FIELDS, GridKey, JobResult, Skipped

SUMMARY_SCHEMA = "mas-promptbench-summary/v1"
OPTIMIZER_SEEDS = (0, 1, 2)
FAMILIES = ("task", "method", "none")
FAILURE_TOTALS = ("infrastructure_failures", "semantic_failures", "budget_exhausted", "skipped")
ARMS = ("baseline", "deployed")  # the test phase's two arms: the seed bundle and the deployed one

BootstrapCI = Callable[[Sequence[Sequence[tuple[float, float]]], int], tuple[float, float]]


def _default_ci(pairs: Sequence[Sequence[tuple[float, float]]], replicates: int) -> tuple[float, float]:
    return paired_bootstrap_ci(pairs, replicates=replicates, seed=0)


def family_name(cell: Mapping[str, Any], family: str) -> str:
    """Holm family of a cell: ``task|task_model`` (default), the method, or ``none`` (no adjustment)."""
    if family == "method":
        return str(cell["method"])
    if family == "none":
        return "none"
    return f"{cell['task']}|{cell['task_model']}"


def comparison_label(cell: Mapping[str, Any], seed: int | str) -> str:
    return "|".join(str(cell[name]) for name in GRID_FIELDS) + f"|seed={seed}"


def failure_totals(jobs: Iterable[JobResult]) -> dict[str, int] | None:
    """Failure counts summed over jobs and both test arms; None unless every job reports them."""
    totals = dict.fromkeys(FAILURE_TOTALS, 0)
    for job in jobs:
        if job.failure_counts is None:
            return None
        for arm in job.failure_counts.values():
            for name in FAILURE_TOTALS:
                totals[name] += int(arm.get(name, 0))
    return totals


def failure_totals_by_arm(jobs: Iterable[JobResult]) -> dict[str, dict[str, int]] | None:
    """Failure counts summed over jobs, per test arm (``baseline`` = the seed bundle, ``deployed``); None unless
    every job reports them. The arms are never added together here: a semantic failure of the seed bundle and one
    of the deployed bundle are different facts."""
    totals = {arm: dict.fromkeys(FAILURE_TOTALS, 0) for arm in ARMS}
    for job in jobs:
        if job.failure_counts is None:
            return None
        for arm in ARMS:
            for name in FAILURE_TOTALS:
                totals[arm][name] += int(job.failure_counts.get(arm, {}).get(name, 0))
    return totals


def _per_seed_job(job: JobResult) -> dict[str, Any]:
    return {
        "selected_candidate": job.selected_candidate,
        "fallback_reason": job.fallback_reason,
        "baseline_validation_score": job.baseline_validation_score,
        "incumbent_validation_score": job.incumbent_validation_score,
        "charged_rollouts": job.charged_rollouts,
        "stop_reason": job.stop_reason,
        "optimization_status": job.optimization_status,
        "valid_for_aggregation": job.valid_for_aggregation,
        "failure_counts": None if job.failure_counts is None else {k: dict(v) for k, v in job.failure_counts.items()},
        "path": job.path,
    }


def _seed_row(job: JobResult) -> dict[str, Any]:
    baseline = mean(job.baseline_scores)
    deployed = mean(job.deployed_scores)
    wins, losses = discordant_pairs(job.baseline_scores, job.deployed_scores)
    return {"seed": job.seed, "n": len(job.example_ids), "baseline": baseline, "deployed": deployed,
            "delta_pp": 100.0 * (deployed - baseline), "wins": wins, "losses": losses,
            "failure_totals": failure_totals([job]), "failure_totals_by_arm": failure_totals_by_arm([job])}


def _id_problems(by_seed: Mapping[int, JobResult]) -> list[str]:
    valid = {seed: job for seed, job in sorted(by_seed.items()) if job.valid_for_aggregation}
    if len(valid) < 2:
        return []
    (first_seed, first), *others = valid.items()
    reference = set(first.example_ids)
    problems = []
    for seed, job in others:
        ids = set(job.example_ids)
        if ids != reference:
            problems.append(
                f"mismatched example IDs: seed {seed} vs seed {first_seed} "
                f"({len(ids - reference)} only in seed {seed}, {len(reference - ids)} only in seed {first_seed})"
            )
    return problems


def summarize_cell(
    jobs: Sequence[JobResult], *, bootstrap_replicates: int, ci: BootstrapCI = _default_ci
) -> dict[str, Any]:
    """Paired summary of one grid cell, or ``incomplete`` with its problems (never averaged then)."""
    jobs = sorted(jobs, key=lambda job: (job.seed, job.path))
    by_seed: dict[int, JobResult] = {}
    problems: list[str] = []
    for seed in sorted({job.seed for job in jobs}):
        same = [job for job in jobs if job.seed == seed]
        by_seed[seed] = same[0]
        if len(same) > 1:
            problems.append(f"duplicate seed {seed}: " + ", ".join(job.path for job in same))
    unexpected = [seed for seed in by_seed if seed not in OPTIMIZER_SEEDS]
    if unexpected:
        problems.append(f"unexpected seeds {unexpected} (expected {list(OPTIMIZER_SEEDS)})")
    missing = [seed for seed in OPTIMIZER_SEEDS if seed not in by_seed]
    if missing:
        problems.append(f"missing seed{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}")
    invalid = [seed for seed, job in by_seed.items() if not job.valid_for_aggregation]
    if invalid:
        problems.append("invalid test phase (valid_for_aggregation false) for seed"
                        f"{'s' if len(invalid) > 1 else ''} {', '.join(map(str, invalid))}")
    problems.extend(_id_problems(by_seed))

    first = jobs[0]
    cell = first.cell
    duplicated = {job.seed for job in jobs if sum(other.seed == job.seed for other in jobs) > 1}
    summary: dict[str, Any] = {
        "cell": cell,
        "registry_key": first.registry_key,
        "source_tables": sorted({table for job in jobs for table in job.source_tables}),
        "status": "incomplete" if problems else "complete",
        "problems": problems,
        "seeds_present": sorted(by_seed),
        "jobs": [job.path for job in jobs],
        "per_seed_job": {str(seed): _per_seed_job(job) for seed, job in sorted(by_seed.items())},
        "fallbacks": sum(1 for job in by_seed.values() if job.is_fallback),
        "failure_totals": failure_totals(jobs),  # over every job file of the cell, both arms
        "failure_totals_by_arm": failure_totals_by_arm(jobs),
        "per_seed": [_seed_row(job) for seed, job in sorted(by_seed.items())
                     if job.valid_for_aggregation and seed not in duplicated],
        "mean_delta_pp": None,
        "std_delta_pp": None,
        "macro_baseline": None,
        "macro_deployed": None,
        "confidence_interval_delta_pp": None,
        "per_seed_exact_mcnemar_p": None,
        "per_seed_mcnemar_p_holm": None,
        "holm_family": None,
    }
    if problems:
        return summary

    rows = summary["per_seed"]
    deltas = [row["delta_pp"] for row in rows]
    low, high = ci([list(zip(job.baseline_scores, job.deployed_scores)) for _, job in sorted(by_seed.items())],
                   bootstrap_replicates)
    summary.update(
        mean_delta_pp=mean(deltas),
        std_delta_pp=sample_std(deltas),
        macro_baseline=mean([row["baseline"] for row in rows]),
        macro_deployed=mean([row["deployed"] for row in rows]),
        confidence_interval_delta_pp=[low, high],
    )
    binary = all(score in (0.0, 1.0) for job in by_seed.values()
                 for score in (*job.baseline_scores, *job.deployed_scores))
    if binary:
        summary["per_seed_exact_mcnemar_p"] = {
            str(row["seed"]): exact_mcnemar_p(row["wins"], row["losses"]) for row in rows
        }
    return summary


def group_by_cell(results: Iterable[JobResult]) -> dict[GridKey, list[JobResult]]:
    groups: dict[GridKey, list[JobResult]] = defaultdict(list)
    for result in results:
        groups[result.grid].append(result)
    return dict(sorted(groups.items(), key=lambda item: tuple(map(str, item[0]))))


def apply_holm(cells: Sequence[dict[str, Any]], family: str) -> None:
    """Fill ``per_seed_mcnemar_p_holm`` and ``holm_family`` of every cell with McNemar p-values, in place."""
    if family not in FAMILIES:
        raise ValueError(f"unknown Holm family {family!r}; expected one of {FAMILIES}")
    families: dict[str, dict[str, float]] = defaultdict(dict)
    for cell in cells:
        for seed, value in (cell.get("per_seed_exact_mcnemar_p") or {}).items():
            families[family_name(cell["cell"], family)][comparison_label(cell["cell"], seed)] = value
    adjusted: dict[str, float] = {}
    for values in families.values():
        adjusted.update(values if family == "none" else holm_adjust(values))
    for cell in cells:
        raw = cell.get("per_seed_exact_mcnemar_p")
        if raw:
            cell["per_seed_mcnemar_p_holm"] = {seed: adjusted[comparison_label(cell["cell"], seed)] for seed in raw}
            cell["holm_family"] = family_name(cell["cell"], family)


def aggregate(
    results: Iterable[JobResult],
    *,
    skipped: Sequence[Skipped] = (),
    bootstrap_replicates: int = 10_000,
    family: str = "task",
    ci: BootstrapCI = _default_ci,
) -> dict[str, Any]:
    """The summary document (schema ``mas-promptbench-summary/v1``) of all cells found in ``results``."""
    cells = [summarize_cell(jobs, bootstrap_replicates=bootstrap_replicates, ci=ci)
             for jobs in group_by_cell(results).values()]
    apply_holm(cells, family)
    return {
        "schema": SUMMARY_SCHEMA,
        "protocol_id": PROTOCOL_ID,
        "family": family,
        "bootstrap_replicates": bootstrap_replicates,
        "cells": cells,
        "skipped_files": [{"path": item.path, "reason": item.reason} for item in skipped],
    }
