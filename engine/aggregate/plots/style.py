"""What every plot shares: condition labels, the simulated mark, axis ranges, the manifest record, atomic PNGs.

Labels: a grid cell is (method, task, topology, framework, communication, team size, model); a label names every
field that can differ within one figure, so distinct conditions never share a label (native and LangGraph runs
of `identity single qwen` differ in their framework part). The runtime part is the registry key (protocol 6's
`runtime` column); communication and team size are added when the key does not already say them.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.aggregate.discovery import GRID_FIELDS, GridKey, JobResult

MARK_TEXT = "SIMULATED / NON-CONFORMANT"
WATERMARK_GID = "simulated-watermark"
BANNER_GID = "simulated-banner"
TOPOLOGY_ORDER = ("single", "independent", "sequential", "centralized", "decentralized")
HOLM_ALPHA = 0.05
DPI = 110


@dataclass(frozen=True)
class Plot:
    """One figure and what it shows (the manifest a test or a caller checks without reading pixels)."""

    name: str  # file stem: <name>.png
    kind: str  # "levels" | "forest" | "learning_curves" | "failures"
    figure: Any
    panels: tuple[str, ...]  # the axes' titles, one per panel
    labels: tuple[str, ...]  # one per condition drawn (distinct for distinct conditions)
    marked: bool  # carries the SIMULATED / NON-CONFORMANT mark
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # "<panel>: <label>" -> (low, high)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "all"


def grid_key(cell: Mapping[str, Any]) -> GridKey:
    return tuple(cell[name] for name in GRID_FIELDS)  # type: ignore[return-value]


def condition_label(cell: Mapping[str, Any], registry_key: str | None, *,
                    parts: Sequence[str] = ("method", "runtime", "framework", "task_model")) -> str:
    """``gepa · sequential · langgraph · qwen`` (the parts asked for), plus communication and team size when the
    registry key does not name them."""
    runtime = registry_key or cell["topology"]
    values = {"method": cell["method"], "task": cell["task"], "runtime": runtime, "framework": cell["framework"],
              "task_model": cell["task_model"]}
    if runtime.endswith(f"_{cell['framework']}") and "runtime" in parts:
        values["framework"] = ""  # `sequential_crewai` already names its framework
    out = [str(values[part]) for part in parts if values[part] != ""]
    if cell["communication"] != "freeform" and cell["communication"] not in runtime:
        out.append(f"comm={cell['communication']}")
    if cell["topology"] != "single" and cell["team_size"] != 4 and f"_r{cell['team_size']}" not in runtime:
        out.append(f"n={cell['team_size']}")
    return " · ".join(out)


def condition_order(cell: Mapping[str, Any], registry_key: str | None) -> tuple[Any, ...]:
    """Paper order: topologies as in section 11.1, then the runtime variant, framework, model, method."""
    topology = cell["topology"]
    rank = TOPOLOGY_ORDER.index(topology) if topology in TOPOLOGY_ORDER else len(TOPOLOGY_ORDER)
    return (rank, topology, registry_key or "", cell["framework"], cell["task_model"], cell["method"],
            cell["communication"], cell["team_size"])


def jobs_by_grid(results: Iterable[JobResult]) -> dict[GridKey, list[JobResult]]:
    out: dict[GridKey, list[JobResult]] = {}
    for job in results:
        out.setdefault(job.grid, []).append(job)
    return out


def any_marked(jobs: Iterable[JobResult]) -> bool:
    return any(job.simulated_or_nonconformant for job in jobs)


def padded_range(values: Iterable[float], *, min_span: float, bounds: tuple[float, float] | None = None,
                 include: Sequence[float] = ()) -> tuple[float, float]:
    """An axis range around ``values`` padded by 8% and at least ``min_span`` wide (never a +-0.04 pp axis around
    one dot), shifted to stay inside ``bounds`` when it fits there."""
    points = [v for v in (*values, *include) if math.isfinite(v)]
    low, high = (min(points), max(points)) if points else (0.0, 0.0)
    pad = 0.08 * (high - low)
    low, high = low - pad, high + pad
    if high - low < min_span:
        middle = (low + high) / 2
        low, high = middle - min_span / 2, middle + min_span / 2
    if bounds is not None:
        if low < bounds[0]:
            low, high = bounds[0], min(bounds[1], high + (bounds[0] - low))
        if high > bounds[1]:
            low, high = max(bounds[0], low - (high - bounds[1])), bounds[1]
    return low, high


def add_mark(figure: Any) -> None:
    """A faint diagonal watermark across the figure and a red banner at its top edge."""
    figure.text(0.5, 0.5, MARK_TEXT, gid=WATERMARK_GID, ha="center", va="center", rotation=25, fontsize=34,
                color="red", alpha=0.13, fontweight="bold", zorder=0)
    figure.text(0.995, 0.995, f"{MARK_TEXT}: not protocol results", gid=BANNER_GID, ha="right", va="top",
                fontsize=8, color="darkred", fontweight="bold")


def finish(figure: Any, title: str, marked: bool) -> None:
    """Figure title, the mark if asked, and a layout that keeps every text off the axes."""
    figure.suptitle(title, fontsize=11, x=0.01, ha="left")
    if marked:
        add_mark(figure)
    figure.set_layout_engine("constrained")
    figure.get_layout_engine().set(h_pad=0.08, w_pad=0.08)


def save_png(figure: Any, path: Path) -> None:
    """Write the PNG to a temp file beside ``path`` and ``os.replace`` it into place (no torn file)."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        figure.savefig(temporary, format="png", dpi=DPI)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def holm_significant(cell: Mapping[str, Any]) -> bool:
    holm = cell.get("per_seed_mcnemar_p_holm") or {}
    return bool(holm) and min(holm.values()) < HOLM_ALPHA
