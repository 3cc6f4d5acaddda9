"""The tab-separated stdout table of ``aggregate``: one row per cell, one indented line per seed below it.

Columns follow protocol 6 (method .. min_p_holm), then the test-phase failure counts summed over seeds: infrastructure
and semantic failures per arm (``_seed``: the seed bundle's arm, ``_deployed``: the deployed bundle's; a sum of
both arms mixes two different facts), budget-exhausted and skipped items over both arms (``-`` when a job file does
not report them). An incomplete cell keeps the column count, shows ``-`` for
every cross-seed figure and lists its problems on indented ``incomplete:`` lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEADER = ("method", "task", "runtime", "model", "seeds", "base", "deployed", "delta_pp", "std_pp", "ci95_pp",
          "fallbacks", "min_p_holm", "infra_seed", "infra_deployed", "sem_fail_seed", "sem_fail_deployed",
          "budget_exhausted", "skipped")
_PER_ARM_COLUMNS = ("infrastructure_failures", "semantic_failures")  # each as (seed arm, deployed arm)
_TOTAL_COLUMNS = ("budget_exhausted", "skipped")


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _counts(totals: Mapping[str, int] | None, name: str) -> str:
    return "-" if totals is None else str(totals.get(name, 0))


def _per_arm(by_arm: Mapping[str, Mapping[str, int]] | None, name: str) -> tuple[str, str]:
    """(seed arm, deployed arm) counts of one failure kind."""
    if by_arm is None:
        return "-", "-"
    return str(by_arm["baseline"].get(name, 0)), str(by_arm["deployed"].get(name, 0))


def seed_line(row: Mapping[str, Any], job: Mapping[str, Any]) -> str:
    by_arm = row.get("failure_totals_by_arm")
    infra, sem = _per_arm(by_arm, "infrastructure_failures"), _per_arm(by_arm, "semantic_failures")
    return (
        f"\t  seed {row['seed']}: base={row['baseline']:.3f} deployed={row['deployed']:.3f} "
        f"delta={row['delta_pp']:+.2f}pp n={row['n']} fallback={job.get('fallback_reason') or 'none'} "
        f"infra={infra[0]}/{infra[1]} sem_fail={sem[0]}/{sem[1]} (seed/deployed) "
        f"charged={job.get('charged_rollouts') if job.get('charged_rollouts') is not None else '-'} "
        f"stop={job.get('stop_reason') or '-'}"
    )


def cell_lines(cell: Mapping[str, Any]) -> list[str]:
    grid = cell["cell"]
    complete = cell["status"] == "complete"
    ci = cell.get("confidence_interval_delta_pp")
    holm = cell.get("per_seed_mcnemar_p_holm") or {}
    totals = cell.get("failure_totals")
    row = (
        grid["method"],
        grid["task"],
        cell.get("registry_key") or grid["topology"],
        grid["task_model"],
        ",".join(map(str, cell["seeds_present"])) or "-",
        _number(cell.get("macro_baseline"), 3) if complete else "incomplete",
        _number(cell.get("macro_deployed"), 3),
        _number(cell.get("mean_delta_pp"), 2),
        _number(cell.get("std_delta_pp"), 2),
        f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "-",
        f"{cell['fallbacks']}/{len(cell['seeds_present']) if not complete else 3}",
        _p(min(holm.values()) if holm else None),
        *(count for name in _PER_ARM_COLUMNS for count in _per_arm(cell.get("failure_totals_by_arm"), name)),
        *(_counts(totals, name) for name in _TOTAL_COLUMNS),
    )
    lines = ["\t".join(row)]
    lines.extend(f"\t  incomplete: {problem}" for problem in cell.get("problems", ()))
    jobs = cell.get("per_seed_job", {})
    lines.extend(seed_line(seed_row, jobs.get(str(seed_row["seed"]), {})) for seed_row in cell.get("per_seed", ()))
    return lines


def format_table(summary: Mapping[str, Any]) -> str:
    """The whole table, header first, no trailing newline."""
    lines = ["\t".join(HEADER)]
    for cell in summary["cells"]:
        lines.extend(cell_lines(cell))
    return "\n".join(lines)
