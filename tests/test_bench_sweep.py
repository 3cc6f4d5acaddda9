"""bench/sweep.py stays runnable: a tiny run per runtime (4 jobs, 2 workers) prints every figure, `--runtime` really
changes what runs (the jobs' cells name langgraph or native), and the figures hang together (the endpoints' own
count never above the limit, ratios from the printed times). Nothing here asserts a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ("runtime", "job_frameworks", "workers", "jobs", "task_endpoints", "delay_ms", "limit_per_endpoint",
           "mean_inflight_over_limit_per_endpoint", "max_inflight_per_endpoint",
           "reflection_endpoint_mean_inflight_over_limit", "packed_wall_s", "floor_s", "floor_longest_job_chain_s",
           "floor_endpoint_throughput_s", "packed_wall_over_floor", "sum_of_jobs_one_at_a_time_s",
           "speedup_vs_one_at_a_time", "reference_serialized_s_per_call",
           "reference_one_process_per_job_all_parallel_wall_s", "reference_one_process_per_job_one_at_a_time_s",
           "speedup_vs_reference_parallel_processes", "speedup_vs_reference_sequential", "model_calls_packed",
           "model_calls_jobs_alone", "engine_cpu_s_parent", "engine_cpu_s_workers", "engine_cpu_ms_per_call",
           "engine_cpu_ms_per_recorded_call", "endpoint_processes_cpu_s", "node_cpu_busy_fraction")


@pytest.mark.parametrize("runtime,framework", [("native", "native"), ("frameworks", "langgraph")])
def test_a_tiny_run_prints_every_figure(runtime, framework):
    proc = subprocess.run([sys.executable, "bench/sweep.py", "--tiny", "--runtime", runtime, "--workers", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert tuple(report) == FIGURES
    assert report["runtime"] == runtime and report["workers"] == 2
    assert report["job_frameworks"] == {framework: report["jobs"]} and report["jobs"] == 4
    assert all(0 < n <= report["limit_per_endpoint"] for n in report["max_inflight_per_endpoint"])
    assert all(0 < u <= 1 for u in report["mean_inflight_over_limit_per_endpoint"])
    assert report["floor_s"] == max(report["floor_longest_job_chain_s"], report["floor_endpoint_throughput_s"]) > 0
    assert report["packed_wall_over_floor"] == pytest.approx(report["packed_wall_s"] / report["floor_s"], rel=0.02)
    assert report["model_calls_packed"] > 0 and report["engine_cpu_s_workers"] > 0
    assert report["engine_cpu_ms_per_call"] > 0
    # the jobs' cards hold at least the calls the endpoints answered (shared evaluations answer the rest)
    assert report["model_calls_jobs_alone"] >= report["model_calls_packed"]
    assert 0 < report["engine_cpu_ms_per_recorded_call"] <= report["engine_cpu_ms_per_call"]
    assert report["endpoint_processes_cpu_s"] >= 0 and report["node_cpu_busy_fraction"] > 0
