"""Forest plot of delta_pp per cell with its 95% interval: ``forest_<task>.png``, one row per complete cell.

Rows in the paper's topology order, labelled method · runtime · framework · model. A cell is marked Holm-significant
(filled diamond) when its smallest Holm-adjusted per-seed McNemar p is below 0.05 (the table's ``min_p_holm``);
others are open circles. The x range holds 0 and every interval, at least 10 pp wide.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from engine.aggregate.discovery import JobResult
from engine.aggregate.plots.style import HOLM_ALPHA, Plot, any_marked, condition_label, condition_order, finish, \
    grid_key, holm_significant, jobs_by_grid, padded_range, slug

MIN_SPAN_PP = 10.0


def _draw(axes: Any, task: str, cells: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, tuple[float,
                                                                                                       float]]]:
    labels: list[str] = []
    intervals: dict[str, tuple[float, float]] = {}
    bounds: list[float] = []
    for row, cell in enumerate(cells):
        low, high = cell["confidence_interval_delta_pp"]
        mid = cell["mean_delta_pp"]
        label = condition_label(cell["cell"], cell.get("registry_key"))
        labels.append(label)
        intervals[f"{task}: {label}"] = (low, high)
        bounds.extend((low, high, mid))
        significant = holm_significant(cell)
        axes.plot([low, high], [row, row], color="0.3", linewidth=1.4, solid_capstyle="butt")
        axes.plot([mid], [row], "D" if significant else "o", markersize=7 if significant else 6,
                  markerfacecolor="tab:red" if significant else "white",
                  markeredgecolor="tab:red" if significant else "0.2")
    axes.axvline(0.0, color="0.5", linewidth=0.8, linestyle="--")
    axes.set_yticks(range(len(cells)), labels, fontsize="small")
    axes.set_ylim(len(cells) - 0.5, -0.5)
    axes.set_xlim(*padded_range(bounds, min_span=MIN_SPAN_PP, include=(0.0,)))
    axes.set_xlabel("delta (pp): deployed - baseline, mean over seeds 0-2, 95% paired bootstrap CI")
    axes.set_title(task)
    axes.grid(axis="x", color="0.9", linewidth=0.6)
    return labels, intervals


def forest_plots(pyplot: Any, cells: Sequence[Mapping[str, Any]], results: Sequence[JobResult]) -> list[Plot]:
    from matplotlib.lines import Line2D

    jobs = jobs_by_grid(results)
    by_task: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for cell in cells:
        if cell["status"] == "complete" and cell.get("confidence_interval_delta_pp"):
            by_task[cell["cell"]["task"]].append(cell)
    plots = []
    for task, group in sorted(by_task.items()):
        ordered = sorted(group, key=lambda c: (c["cell"]["method"], condition_order(c["cell"], c.get("registry_key"))))
        figure, axes = pyplot.subplots(figsize=(8.5, 0.32 * len(ordered) + 2.4))
        labels, intervals = _draw(axes, task, ordered)
        legend = [Line2D([], [], marker="D", linestyle="none", markerfacecolor="tab:red", markeredgecolor="tab:red",
                         label=f"Holm-adjusted McNemar p < {HOLM_ALPHA} (some seed)"),
                  Line2D([], [], marker="o", linestyle="none", markerfacecolor="white", markeredgecolor="0.2",
                         label="not significant")]
        family = next((c.get("holm_family") for c in ordered if c.get("holm_family")), None)
        figure.legend(handles=legend, loc="outside lower center", ncols=2, fontsize="small", frameon=False,
                      title=f"Holm family: {family}" if family else None, title_fontsize="small")
        marked = any_marked(job for cell in ordered for job in jobs.get(grid_key(cell["cell"]), ()))
        finish(figure, f"{task}: delta_pp per cell", marked)
        plots.append(Plot(name=f"forest_{slug(task)}", kind="forest", figure=figure, panels=(task,),
                          labels=tuple(labels), marked=marked, intervals=intervals))
    return plots
