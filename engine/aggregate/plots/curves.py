"""Learning curves over the three seeds: ``learning_curves_<task>_<method>.png``, one panel per condition.

Each job's ``optimization/learning_curve.jsonl`` (no extra model calls: the method's own observed score, on its
validation or training rows, projected on the charged-rollout grid 0, 10, ..., budget) gives one thin line per
seed; the mean over the seeds that have a score at a grid point is the thick line. Points after the method stopped
(``post_stop_carried_forward``: the incumbent carried to the budget) are drawn dashed.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.aggregate.discovery import GridKey, JobResult
from engine.aggregate.plots.style import Plot, any_marked, condition_label, condition_order, finish, slug

SEED_COLOURS = ("tab:blue", "tab:orange", "tab:green")
Point = tuple[float, float, bool]  # (charged-rollout grid point, observed score, carried forward after the stop)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_learning_curve(path: str) -> tuple[list[Point], list[str]]:
    """(rollout grid point, native_observed_score, carried forward) of a learning_curve.jsonl, and warnings for
    bad lines. The x value is ``rollout_grid`` (older files: ``charged_rollouts``)."""
    points: list[Point] = []
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
            x = row["rollout_grid"] if "rollout_grid" in row else row["charged_rollouts"]
            y = row["native_observed_score"]
        except (ValueError, TypeError, KeyError) as exc:
            warnings.append(f"{path}:{number}: skipped line ({type(exc).__name__})")
            continue
        if y is None:
            continue  # no observed score yet at this grid point
        if not (_number(x) and _number(y)):
            warnings.append(f"{path}:{number}: skipped line (non-numeric values)")
            continue
        points.append((float(x), float(y), bool(row.get("post_stop_carried_forward", False))))
    return sorted(points), warnings


def _draw(axes: Any, curves: dict[int, list[Point]]) -> None:
    for seed, points in sorted(curves.items()):
        live = [p for p in points if not p[2]]
        tail = [p for p in points if p[2]]
        colour = SEED_COLOURS[seed % len(SEED_COLOURS)]
        axes.plot([p[0] for p in live], [p[1] for p in live], color=colour, linewidth=1, alpha=0.8,
                  label=f"seed {seed}")
        if tail:
            joined = live[-1:] + tail
            axes.plot([p[0] for p in joined], [p[1] for p in joined], color=colour, linewidth=1, alpha=0.8,
                      linestyle="--")
    at: dict[float, list[float]] = defaultdict(list)
    for points in curves.values():
        for x, y, _ in points:
            at[x].append(y)
    xs = sorted(at)
    axes.plot(xs, [statistics.fmean(at[x]) for x in xs], color="black", linewidth=2, label="mean over seeds")
    axes.grid(color="0.9", linewidth=0.6)


def curve_plots(pyplot: Any, results: Sequence[JobResult]) -> tuple[list[Plot], list[str]]:
    warnings: list[str] = []
    groups: dict[tuple[str, str], dict[GridKey, dict[int, list[Point]]]] = defaultdict(lambda: defaultdict(dict))
    drawn: dict[tuple[str, str], list[JobResult]] = defaultdict(list)
    first: dict[GridKey, JobResult] = {}
    for job in sorted(results, key=lambda j: (j.grid, j.seed, j.path)):
        if not job.learning_curve:
            continue
        points, problems = read_learning_curve(job.learning_curve)
        warnings.extend(problems)
        if points:
            key = (job.cell["task"], job.cell["method"])
            groups[key][job.grid].setdefault(job.seed, points)
            drawn[key].append(job)
            first.setdefault(job.grid, job)
    plots = []
    for (task, method), conditions in sorted(groups.items()):
        order = sorted(conditions, key=lambda g: condition_order(first[g].cell, first[g].registry_key))
        ncols = min(4, len(order))
        nrows = math.ceil(len(order) / ncols)
        figure, grid = pyplot.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True,
                                       figsize=(3.3 * ncols + 0.6, 2.7 * nrows + 1.2))
        labels = []
        for index, condition in enumerate(order):
            axes = grid.flat[index]
            label = condition_label(first[condition].cell, first[condition].registry_key, parts=("runtime", "framework",
                                                                                      "task_model"))
            labels.append(label)
            _draw(axes, conditions[condition])
            axes.set_title(label, fontsize="small")
        for index, axes in enumerate(grid.flat):
            if index >= len(order):
                axes.set_visible(False)
            elif index + ncols >= len(order):  # lowest drawn panel of its column: its own x axis labels
                axes.xaxis.set_tick_params(labelbottom=True)
                axes.set_xlabel("rollouts charged", fontsize="small")
        figure.supylabel("observed score (the method's own split)", fontsize="small")
        handles, names = grid.flat[0].get_legend_handles_labels()
        figure.legend(handles, names, loc="outside lower center", ncols=4, fontsize="small", frameon=False)
        marked = any_marked(drawn[(task, method)])
        finish(figure, f"{task} · {method}: learning curves (dashed: carried forward after the stop)", marked)
        plots.append(Plot(name=f"learning_curves_{slug(task)}_{slug(method)}", kind="learning_curves",
                          figure=figure, panels=tuple(labels), labels=tuple(labels), marked=marked))
    return plots, warnings
