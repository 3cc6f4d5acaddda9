"""Failure counts per test arm: ``failures_<task>.png``, two bars per condition (seed bundle, deployed).

Counts are the test phase's items summed over the seeds, one panel per kind as result.json reports them
(infrastructure and semantic failures always; budget exhausted and skipped when any is non-zero), each panel on
its own scale so a handful of infrastructure failures is not lost beside the wrong answers; the two arms are
never added together. Labels name
method · runtime · framework · model, so native and LangGraph runs of one method and topology differ.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from engine.aggregate.discovery import JobResult
from engine.aggregate.plots.style import Plot, any_marked, condition_label, condition_order, finish, grid_key, \
    jobs_by_grid, slug

KINDS = (("infrastructure_failures", "infrastructure failures"), ("semantic_failures", "semantic failures"),
         ("budget_exhausted", "budget exhausted"), ("skipped", "skipped"))
ARMS = (("baseline", "seed bundle", "0.6"), ("deployed", "deployed", "tab:blue"))


def _panel(axes: Any, cells: Sequence[Mapping[str, Any]], key: str, title: str) -> None:
    for offset, (arm, arm_name, colour) in zip((-0.2, 0.2), ARMS):
        widths = [cell["failure_totals_by_arm"][arm].get(key, 0) for cell in cells]
        axes.barh([row + offset for row in range(len(cells))], widths, height=0.38, color=colour, label=arm_name)
        for row, width in enumerate(widths):
            axes.annotate(str(width), (width, row + offset), xytext=(2, 0), textcoords="offset points",
                          va="center", fontsize=7)
    top = max([cell["failure_totals_by_arm"][arm].get(key, 0) for cell in cells for arm, _, _ in ARMS] + [1])
    axes.set_xlim(0, top * 1.18 + 0.5)
    axes.set_ylim(len(cells) - 0.5, -0.5)
    axes.set_title(title, fontsize="medium")
    axes.set_xlabel("test items, summed over seeds", fontsize="small")
    axes.grid(axis="x", color="0.9", linewidth=0.6)


def failure_plots(pyplot: Any, cells: Sequence[Mapping[str, Any]], results: Sequence[JobResult]) -> list[Plot]:
    jobs = jobs_by_grid(results)
    by_task: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for cell in cells:
        if cell.get("failure_totals_by_arm") is not None:
            by_task[cell["cell"]["task"]].append(cell)
    plots = []
    for task, group in sorted(by_task.items()):
        ordered = sorted(group, key=lambda c: (c["cell"]["method"], condition_order(c["cell"], c.get("registry_key"))))
        kinds = [(key, title) for key, title in KINDS if key in ("infrastructure_failures", "semantic_failures")
                 or any(c["failure_totals_by_arm"][arm].get(key, 0) for c in ordered for arm, _, _ in ARMS)]
        figure, grid = pyplot.subplots(1, len(kinds), squeeze=False, sharey=True,
                                       figsize=(2.6 * len(kinds) + 4.5, 0.42 * len(ordered) + 2.2))
        for axes, (key, title) in zip(grid.flat, kinds):
            _panel(axes, ordered, key, title)
        labels = [condition_label(c["cell"], c.get("registry_key")) for c in ordered]
        grid.flat[0].set_yticks(range(len(ordered)), labels, fontsize="small")
        figure.legend(*grid.flat[0].get_legend_handles_labels(), loc="outside lower center", ncols=2,
                      fontsize="small", frameon=False, title="test arm", title_fontsize="small")
        marked = any_marked(job for cell in ordered for job in jobs.get(grid_key(cell["cell"]), ()))
        finish(figure, f"{task}: test-phase failure counts per arm", marked)
        plots.append(Plot(name=f"failures_{slug(task)}", kind="failures", figure=figure,
                          panels=tuple(title for _, title in kinds), labels=tuple(labels), marked=marked))
    return plots
