"""``aggregate --plot`` on a synthetic 3-seed grid: every panel present, distinct labels for distinct conditions,
the simulated mark exactly on figures from simulated/non-conformant jobs, drawn intervals equal to the summary's,
PNGs of sensible size with no text over any axes. The PNGs are copied to $MAS_PLOT_ARTIFACTS (default
tests/artifacts/plots) and the path is printed, to be looked at."""

from __future__ import annotations

import os
import random
import shutil
import struct
from pathlib import Path

import pytest

from engine.aggregate.discovery import find_results, load_results
from engine.aggregate.summary import aggregate
from engine.aggregate.synthetic import synthetic_result, write_job

pytest.importorskip("matplotlib")

from engine.aggregate.plots import build_plots, load_pyplot, write_plots  # noqa: E402
from engine.aggregate.plots.style import BANNER_GID, MARK_TEXT, WATERMARK_GID  # noqa: E402

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

BASE = {"method": "gepa", "task": "hotpotqa", "topology": "single", "framework": "langgraph",
        "communication": "freeform", "team_size": 4, "task_model": "qwen"}
TOPOLOGIES = ("single", "independent", "sequential", "centralized", "decentralized")
GRIDS = ([dict(BASE, topology=t) for t in TOPOLOGIES] + [dict(BASE, framework="native"),
         dict(BASE, topology="sequential", framework="crewai")] + [dict(BASE, task="math", topology=t)
                                                                    for t in TOPOLOGIES])


def _curve(seed: int) -> list[dict]:
    return [{"rollout_grid": x, "charged_rollouts": min(x, 500), "post_stop_carried_forward": x > 500,
             "native_observed_score": None if x == 0 else 0.4 + 0.0003 * min(x, 500) + 0.01 * seed}
            for x in range(0, 601, 10)]


def _grid_runs(root: Path, *, simulated: bool) -> tuple[dict, list]:
    rng = random.Random(11)
    for grid in GRIDS:
        for seed in (0, 1, 2):
            result = synthetic_result(grid, seed, n_items=40, rng=rng, conformant=not simulated,
                                      endpoint_kind="simulated" if simulated else "openai-compatible")
            write_job(root, result, learning_curve=_curve(seed))
    results, skipped = load_results(find_results([root]), roots=[root], include_nonconformant=True)
    assert not skipped and len(results) == 3 * len(GRIDS)
    return aggregate(results, bootstrap_replicates=200), results


def _texts(figure):
    yield from figure.texts
    for axes in figure.axes:
        yield from (axes.title, axes.xaxis.label, axes.yaxis.label, *axes.get_xticklabels(),
                    *axes.get_yticklabels())
    yield from (legend for legend in figure.legends)


def _overlaps(figure) -> list[str]:
    renderer = figure.canvas.get_renderer()
    figure.draw(renderer)
    boxes = [axes.get_window_extent(renderer) for axes in figure.axes if axes.get_visible()]
    problems = []
    for text in _texts(figure):
        if not text.get_visible() or text.get_gid() == WATERMARK_GID:
            continue
        if hasattr(text, "get_text") and not text.get_text():
            continue
        box = text.get_window_extent(renderer)
        inside = [b for b in boxes if box.overlaps(b) and box.intersection(box, b).width > 1
                  and box.intersection(box, b).height > 1]
        if inside:
            problems.append(repr(text.get_text() if hasattr(text, "get_text") else text))
    return problems


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("simulated", [True, False], ids=["simulated", "conformant"])
def test_plots_on_a_three_seed_grid(tmp_path, simulated):
    summary, results = _grid_runs(tmp_path / "runs", simulated=simulated)
    pyplot = load_pyplot()
    plots, warnings = build_plots(summary, results, pyplot)
    try:
        assert warnings == []
        kinds = {(plot.kind, plot.name): plot for plot in plots}
        assert sorted(name for _, name in kinds) == sorted(
            ["levels_gepa_qwen", "forest_hotpotqa", "forest_math", "learning_curves_hotpotqa_gepa",
             "learning_curves_math_gepa", "failures_hotpotqa", "failures_math"])
        levels = kinds[("levels", "levels_gepa_qwen")]
        assert levels.panels == ("hotpotqa", "math")
        assert [axes.get_title() for axes in levels.figure.axes if axes.get_visible()] == ["hotpotqa", "math"]
        cells = {(c["cell"]["task"], c["cell"]["topology"], c["cell"]["framework"]): c for c in summary["cells"]}
        assert all(c["status"] == "complete" for c in cells.values())
        # every condition drawn once, with distinct labels (native and LangGraph single differ)
        for plot in plots:
            assert len(set(plot.labels)) == len(plot.labels), plot.name
        assert len(levels.labels) == len(GRIDS)
        forest = kinds[("forest", "forest_hotpotqa")]
        assert "gepa · single · langgraph · qwen" in forest.labels and "gepa · single · native · qwen" in forest.labels
        assert len(forest.labels) == 7 and len(kinds[("failures", "failures_hotpotqa")].labels) == 7
        assert kinds[("learning_curves", "learning_curves_hotpotqa_gepa")].panels[0] == "single · langgraph · qwen"
        assert kinds[("failures", "failures_math")].panels[:2] == ("infrastructure failures", "semantic failures")
        # intervals drawn = the aggregate's numbers
        single = cells[("hotpotqa", "single", "native")]
        low, high = single["confidence_interval_delta_pp"]
        assert forest.intervals["hotpotqa: gepa · single · native · qwen"] == (low, high)
        base = 100 * single["macro_baseline"]
        assert levels.intervals["hotpotqa: single · native"] == pytest.approx((base + low, base + high))
        # a sensible y range: at least 10 points tall on the levels plot
        for axes in levels.figure.axes:
            if axes.get_visible():
                bottom, top = axes.get_ylim()
                assert top - bottom >= 10.0 - 1e-9 and 0.0 <= bottom and top <= 100.0
        # the mark: on every figure from simulated runs, on none from conformant ones
        for plot in plots:
            gids = {text.get_gid(): text.get_text() for text in plot.figure.texts}
            assert plot.marked is simulated
            assert (gids.get(WATERMARK_GID) == MARK_TEXT) is simulated and (BANNER_GID in gids) is simulated
            assert _overlaps(plot.figure) == [], plot.name
    finally:
        for plot in plots:
            pyplot.close(plot.figure)

    written, _ = write_plots(summary, results, tmp_path / "plots", pyplot)
    assert sorted(p.name for p in written) == sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert not [p for p in (tmp_path / "plots").iterdir() if p.name.startswith(".")]  # no temp file left
    stable = Path(os.environ.get("MAS_PLOT_ARTIFACTS", Path(__file__).parents[2] / "artifacts" / "plots"))
    stable = stable / ("simulated" if simulated else "conformant")
    stable.mkdir(parents=True, exist_ok=True)
    for path in written:
        width, height = _png_size(path)
        assert 500 <= width <= 4000 and 300 <= height <= 4000, (path.name, width, height)
        shutil.copy(path, stable / path.name)
    print(f"plots copied to {stable}")
