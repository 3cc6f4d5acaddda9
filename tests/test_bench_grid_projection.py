"""bench/grid_projection.py stays a runnable thin caller of engine/sweep/projection.py: a smoke run (gepa jobs at a
20-rollout budget, so the figures are not the grid's) prints every figure, and they are the engine's model applied to
the call counts it measured. Nothing here asserts a time."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from engine.sweep.projection import GPUS, gpu_seconds, throughput
import pytest

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ("measured_calls_per_job", "jobs", "conditions_x_seeds", "model_calls_reference", "model_calls_sweep",
           "tokens_per_s_at_c1", "tokens_per_s_at_c32", "gpu_hours_reference", "gpu_hours_sweep", "ratio",
           "busy_assumed", "gpu")


def test_the_bench_prints_every_figure_from_the_engines_model():
    proc = subprocess.run([sys.executable, "bench/grid_projection.py", "--budget", "20", "--gpu", "h200"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert tuple(report) == FIGURES
    assert len(report["measured_calls_per_job"]) == 10 and all(n > 0 for n in report["measured_calls_per_job"].values())
    h200 = GPUS["h200"]
    assert report["gpu"] == "h200" and report["jobs"] == 1836
    assert report["tokens_per_s_at_c1"] == round(throughput(1, h200), 1)
    assert report["tokens_per_s_at_c32"] == round(throughput(32, h200), 1)
    assert report["gpu_hours_sweep"] == round(gpu_seconds(report["model_calls_sweep"], 32, 0.9, h200) / 3600, 1)
    assert report["gpu_hours_reference"] == round(gpu_seconds(report["model_calls_reference"], 1, 1.0, h200) / 3600,
                                                  1)
    # the bench's own arithmetic on its measured calls, as the module computes it
    spec = importlib.util.spec_from_file_location("grid_projection", ROOT / "bench" / "grid_projection.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    calls = {tuple(k.split("/")): n for k, n in report["measured_calls_per_job"].items()}
    again = module.project(calls, 32, 0.9, h200)
    assert {k: report[k] for k in again} == again
