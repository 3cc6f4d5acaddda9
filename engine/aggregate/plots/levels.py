"""Baseline -> optimized per topology, one panel per dataset (protocol 11.1's layout): ``levels_<method>_<model>.png``.

Per complete cell: the macro baseline (open circle) and the macro deployed score (filled) in points of score, joined
by a line, with the seed-stratified paired bootstrap 95% interval of the gain drawn as a whisker at the deployed end
(baseline + CI of delta_pp: the interval the aggregate reports, placed where the reader compares it). Topologies run
along the axis in the paper's order; several runtimes of one topology (frameworks, protocols, team sizes) sit side by
side with distinct tick labels. The y range covers every marker and whisker, at least 10 points tall, inside 0-100.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from engine.aggregate.discovery import GridKey, JobResult
from engine.aggregate.plots.style import Plot, any_marked, condition_label, condition_order, finish, grid_key, \
    padded_range, slug

MIN_SPAN_PP = 10.0
TICK_PARTS = ("runtime", "framework")


def _panel(axes: Any, task: str, cells: Sequence[Mapping[str, Any]], intervals: dict[str, tuple[float, float]]) \
        -> list[str]:
    labels: list[str] = []
    values: list[float] = []
    for x, cell in enumerate(cells):
        base, dep = 100.0 * cell["macro_baseline"], 100.0 * cell["macro_deployed"]
        low, high = (base + bound for bound in cell["confidence_interval_delta_pp"])
        label = condition_label(cell["cell"], cell.get("registry_key"), parts=TICK_PARTS)
        labels.append(label)
        intervals[f"{task}: {label}"] = (low, high)
        values.extend((base, dep, low, high))
        axes.plot([x, x], [base, dep], color="0.55", linewidth=1.2, zorder=1)
        axes.errorbar([x + 0.12], [base + cell["mean_delta_pp"]], yerr=[[cell["mean_delta_pp"] - (low - base)],
                      [(high - base) - cell["mean_delta_pp"]]], fmt="none", ecolor="tab:blue", capsize=3,
                      linewidth=1.2, zorder=2)
        axes.plot([x], [base], "o", markerfacecolor="white", markeredgecolor="0.2", markersize=7, zorder=3,
                  label="baseline (seed bundle)" if x == 0 else None)
        axes.plot([x], [dep], "o", color="tab:blue", markersize=7, zorder=3,
                  label="optimized (deployed)" if x == 0 else None)
    axes.set_xticks(range(len(cells)), labels, rotation=30 if len(cells) > 3 else 0, ha="right" if len(cells) > 3
                    else "center", fontsize="small")
    axes.set_xlim(-0.6, len(cells) - 0.4)
    axes.set_ylim(*padded_range(values, min_span=MIN_SPAN_PP, bounds=(0.0, 100.0)))
    axes.set_ylabel("test score (%)")
    axes.set_title(task)
    axes.grid(axis="y", color="0.9", linewidth=0.6)
    return labels


def level_plots(pyplot: Any, cells: Sequence[Mapping[str, Any]], results: Sequence[JobResult]) -> list[Plot]:
    jobs: dict[GridKey, list[JobResult]] = defaultdict(list)
    for job in results:
        jobs[job.grid].append(job)
    groups: dict[tuple[str, str], dict[str, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for cell in cells:
        if cell["status"] == "complete" and cell.get("confidence_interval_delta_pp"):
            groups[(cell["cell"]["method"], cell["cell"]["task_model"])][cell["cell"]["task"]].append(cell)
    plots = []
    for (method, model), by_task in sorted(groups.items()):
        tasks = sorted(by_task)
        ncols = min(3, len(tasks))
        nrows = math.ceil(len(tasks) / ncols)
        widest = max(len(group) for group in by_task.values())
        figure, grid = pyplot.subplots(nrows, ncols, squeeze=False, figsize=(
            ncols * max(3.6, 0.55 * widest + 1.4), nrows * 3.6 + 0.6))
        intervals: dict[str, tuple[float, float]] = {}
        labels: list[str] = []
        for index, task in enumerate(tasks):
            ordered = sorted(by_task[task], key=lambda c: condition_order(c["cell"], c.get("registry_key")))
            labels.extend(f"{task}: {label}" for label in _panel(grid.flat[index], task, ordered, intervals))
        for axes in list(grid.flat)[len(tasks):]:
            axes.set_visible(False)
        handles, names = grid.flat[0].get_legend_handles_labels()
        figure.legend(handles, [*names], loc="outside lower center", ncols=3, fontsize="small", frameon=False,
                      title="whisker: 95% paired bootstrap CI of the gain, from the baseline", title_fontsize="small")
        drawn = [job for group in by_task.values() for cell in group for job in jobs[grid_key(cell["cell"])]]
        marked = any_marked(drawn)
        finish(figure, f"{method} · {model}: baseline -> optimized per topology (mean over seeds 0-2)", marked)
        plots.append(Plot(name=f"levels_{slug(method)}_{slug(model)}", kind="levels", figure=figure, panels=tuple(tasks),
                          labels=tuple(labels), marked=marked, intervals=intervals))
    return plots
