"""PNG plots of an aggregate summary (optional: needs matplotlib, the ``plot`` extra; imported lazily, Agg backend).

* ``delta_<task>.png``: mean delta_pp with its 95% bootstrap CI per complete cell, grouped by topology.
* ``learning_curve_<method>.png``: native_observed_score against charged rollouts, one line per job that has an
  ``optimization/learning_curve.jsonl`` beside its result.json.
* ``failures_<task>.png``: test-phase failure counts per cell (stacked: infra, semantic, budget, skipped).
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.aggregate.discovery import JobResult

FAILURE_KINDS = (("infrastructure_failures", "infra"), ("semantic_failures", "semantic"),
                 ("budget_exhausted", "budget exhausted"), ("skipped", "skipped"))


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def load_pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or ``PlotUnavailable``."""
    try:
        import matplotlib
    except ImportError as exc:
        raise PlotUnavailable(
            "--plot needs matplotlib, which is not installed (pip install 'mas-promptbench-engine[plot]')"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "all"


def _cell_label(cell: Mapping[str, Any]) -> str:
    grid = cell["cell"]
    return f"{grid['method']} {cell.get('registry_key') or grid['topology']} {grid['task_model']}"


def read_learning_curve(path: str) -> tuple[list[tuple[float, float]], list[str]]:
    """(charged_rollouts, native_observed_score) points of a learning_curve.jsonl, and warnings for bad lines."""
    points: list[tuple[float, float]] = []
    warnings: list[str] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return [], [f"{path}: unreadable ({exc})"]
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            x, y = row["charged_rollouts"], row["native_observed_score"]
        except (ValueError, TypeError, KeyError) as exc:
            warnings.append(f"{path}:{number}: skipped line ({type(exc).__name__})")
            continue
        if y is None:
            continue  # no observed score yet at this grid point
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (x, y)):
            warnings.append(f"{path}:{number}: skipped line (non-numeric values)")
            continue
        points.append((float(x), float(y)))
    return sorted(points), warnings


def _delta_plots(pyplot: Any, cells: Sequence[Mapping[str, Any]], out: Path) -> list[Path]:
    written = []
    by_task: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for cell in cells:
        if cell["status"] == "complete":
            by_task[cell["cell"]["task"]].append(cell)
    for task, task_cells in sorted(by_task.items()):
        by_topology: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for cell in task_cells:
            by_topology[cell["cell"]["topology"]].append(cell)
        methods = sorted({cell["cell"]["method"] for cell in task_cells})
        colours = {method: pyplot.get_cmap("tab10")(index % 10) for index, method in enumerate(methods)}
        figure, axes = pyplot.subplots(figsize=(max(6.0, 0.25 * len(task_cells) + 3), 4.5))
        x = 0.0
        ticks, tick_labels = [], []
        seen: set[str] = set()
        for topology, group in sorted(by_topology.items()):
            start = x
            for cell in sorted(group, key=_cell_label):
                low, high = cell["confidence_interval_delta_pp"]
                mid = cell["mean_delta_pp"]
                method = cell["cell"]["method"]
                axes.errorbar([x], [mid], yerr=[[mid - low], [high - mid]], fmt="o", color=colours[method],
                              capsize=2, label=None if method in seen else method)
                seen.add(method)
                x += 1.0
            ticks.append((start + x - 1.0) / 2)
            tick_labels.append(topology)
            x += 1.0
        axes.axhline(0.0, color="grey", linewidth=0.8)
        axes.set_xticks(ticks, tick_labels)
        axes.set_ylabel("delta (pp), 95% CI")
        axes.set_title(f"{task}: deployed - baseline per cell")
        axes.legend(fontsize="small")
        figure.tight_layout()
        path = out / f"delta_{_slug(task)}.png"
        figure.savefig(path, dpi=100)
        pyplot.close(figure)
        written.append(path)
    return written


def _learning_curve_plots(pyplot: Any, results: Sequence[JobResult], out: Path) -> tuple[list[Path], list[str]]:
    written, warnings = [], []
    by_method: dict[str, list[JobResult]] = defaultdict(list)
    for job in results:
        if job.learning_curve:
            by_method[job.cell["method"]].append(job)
    for method, jobs in sorted(by_method.items()):
        figure, axes = pyplot.subplots(figsize=(7, 4.5))
        lines = 0
        for job in sorted(jobs, key=lambda j: (j.grid, j.seed)):
            points, problems = read_learning_curve(job.learning_curve or "")
            warnings.extend(problems)
            if not points:
                continue
            label = f"{job.cell['task']} {job.registry_key or job.cell['topology']} s{job.seed}"
            axes.plot([p[0] for p in points], [p[1] for p in points], linewidth=1, alpha=0.7, label=label)
            lines += 1
        if lines == 0:
            pyplot.close(figure)
            continue
        axes.set_xlabel("charged rollouts")
        axes.set_ylabel("native observed score")
        axes.set_title(f"{method}: learning curves ({lines} jobs)")
        if lines <= 12:
            axes.legend(fontsize="small")
        figure.tight_layout()
        path = out / f"learning_curve_{_slug(method)}.png"
        figure.savefig(path, dpi=100)
        pyplot.close(figure)
        written.append(path)
    return written, warnings


def _failure_plots(pyplot: Any, cells: Sequence[Mapping[str, Any]], out: Path) -> list[Path]:
    written = []
    by_task: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for cell in cells:
        if cell.get("failure_totals") is not None:
            by_task[cell["cell"]["task"]].append(cell)
    for task, task_cells in sorted(by_task.items()):
        task_cells = sorted(task_cells, key=_cell_label)
        figure, axes = pyplot.subplots(figsize=(7, max(3.0, 0.25 * len(task_cells) + 1.5)))
        positions = list(range(len(task_cells)))
        left = [0] * len(task_cells)
        for key, label in FAILURE_KINDS:
            widths = [cell["failure_totals"].get(key, 0) for cell in task_cells]
            axes.barh(positions, widths, left=left, label=label)
            left = [a + b for a, b in zip(left, widths)]
        axes.set_yticks(positions, [_cell_label(cell) for cell in task_cells], fontsize="small")
        axes.set_xlabel("test-phase items (both arms, all seeds)")
        axes.set_title(f"{task}: failure counts per cell")
        axes.legend(fontsize="small")
        figure.tight_layout()
        path = out / f"failures_{_slug(task)}.png"
        figure.savefig(path, dpi=100)
        pyplot.close(figure)
        written.append(path)
    return written


def write_plots(summary: Mapping[str, Any], results: Sequence[JobResult], out_dir: Path,
                pyplot: Any | None = None) -> tuple[list[Path], list[str]]:
    """Write every plot into ``out_dir`` (created); returns the files written and warnings."""
    pyplot = pyplot or load_pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cells = summary["cells"]
    curves, warnings = _learning_curve_plots(pyplot, results, out)
    return _delta_plots(pyplot, cells, out) + curves + _failure_plots(pyplot, cells, out), warnings
