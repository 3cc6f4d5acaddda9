"""PNG plots of an aggregate summary (optional: matplotlib, the ``plot`` extra; imported lazily, Agg backend).

* ``levels_<method>_<model>.png`` (levels.py): baseline -> optimized per topology, one panel per dataset, with the
  95% bootstrap interval of the gain (protocol 11.1's layout).
* ``forest_<task>.png`` (forest.py): delta_pp with its interval per cell, Holm-significant cells marked.
* ``learning_curves_<task>_<method>.png`` (curves.py): observed score vs rollouts charged, per condition, seeds 0-2.
* ``failures_<task>.png`` (failures.py): failure counts per test arm (seed bundle vs deployed) by kind.

Every figure made from a simulated or non-conformant job carries a ``SIMULATED / NON-CONFORMANT`` watermark and
banner (style.py). ``build_plots`` returns the figures with a manifest (``Plot``: panels, labels, intervals,
mark) for callers and tests; ``write_plots`` saves each PNG atomically and closes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.aggregate.discovery import JobResult
from engine.aggregate.plots.curves import read_learning_curve
from engine.aggregate.plots.style import MARK_TEXT, Plot, save_png

__all__ = ["MARK_TEXT", "Plot", "PlotUnavailable", "build_plots", "load_pyplot", "read_learning_curve",
           "write_plots"]


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def load_pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or ``PlotUnavailable``."""
    try:
        import matplotlib
    except ImportError as exc:
        raise PlotUnavailable(
            "--plot needs the 'plot' extra (matplotlib), which is not installed: "
            "pip install 'mas-promptbench-engine[plot]'"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def build_plots(summary: Mapping[str, Any], results: Sequence[JobResult],
                pyplot: Any | None = None) -> tuple[list[Plot], list[str]]:
    """Every figure (open; the caller closes them) and warnings about unreadable learning-curve lines."""
    from engine.aggregate.plots.curves import curve_plots
    from engine.aggregate.plots.failures import failure_plots
    from engine.aggregate.plots.forest import forest_plots
    from engine.aggregate.plots.levels import level_plots

    pyplot = pyplot or load_pyplot()
    cells = summary["cells"]
    curves, warnings = curve_plots(pyplot, results)
    plots = [*level_plots(pyplot, cells, results), *forest_plots(pyplot, cells, results), *curves,
             *failure_plots(pyplot, cells, results)]
    return plots, warnings


def write_plots(summary: Mapping[str, Any], results: Sequence[JobResult], out_dir: Path,
                pyplot: Any | None = None) -> tuple[list[Path], list[str]]:
    """Write every plot into ``out_dir`` (created), each PNG atomically; returns the files written and warnings."""
    pyplot = pyplot or load_pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots, warnings = build_plots(summary, results, pyplot)
    written = []
    try:
        for plot in plots:
            path = out / f"{plot.name}.png"
            save_png(plot.figure, path)
            written.append(path)
    finally:
        for plot in plots:
            pyplot.close(plot.figure)
    return written, warnings
