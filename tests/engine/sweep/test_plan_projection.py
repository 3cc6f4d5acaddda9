"""`sweep plan --endpoints N --gpu G`: GPU-hours and wall time from the throughput model of engine/sweep/projection.py
(the numbers printed equal the projection function's, for the full grid and a filtered one), its assumptions
printed; the framework column; bad options one line, exit 2. No wall-clock assertion anywhere."""

from __future__ import annotations

import json
import re

import pytest

from engine.sweep.cost import COMPLETION_TOKENS_PER_CALL, PROMPT_TOKENS_PER_CALL, Cost, estimate
from engine.sweep.grid import SEEDS
from engine.sweep.plan import Filters, check_filters, jobs_for, select
from engine.sweep.projection import A100, GPUS, gpu_seconds, project, throughput
from tests.engine.sweep.sweeputil import sweep

FILTERED = {"tasks": ("bfcl",), "tables": (3,)}


def expected(filters: dict[str, tuple[object, ...]], gpu: str = "h200", endpoints: int = 8):
    """The projection of the selection, computed here without the CLI: grid -> filters -> jobs -> cost -> model."""
    jobs = jobs_for(select(check_filters(Filters(**filters))), SEEDS, {}, "frameworks")  # type: ignore[arg-type]
    return project(estimate([j for j in jobs if j.runnable], 600), GPUS[gpu], endpoints, 32, 0.9)


FLAGS = {"tasks": "--tasks", "tables": "--table"}


def cli_args(filters: dict[str, tuple[object, ...]]) -> list[str]:
    return [a for k, v in filters.items() for a in (FLAGS[k], ",".join(map(str, v)))]


@pytest.mark.slow
@pytest.mark.parametrize("filters", [{}, FILTERED], ids=["full-grid", "bfcl-table-3"])
def test_plan_prints_the_projections_gpu_hours_and_wall_time(filters):
    want = expected(filters)
    proc = sweep("plan", "--endpoints", "8", "--gpu", "h200", *cli_args(filters))
    assert proc.returncode == 0, proc.stderr
    line = next(t for t in proc.stdout.splitlines() if t.startswith("GPU-hours on h200"))
    m = re.search(r": ([\d,.]+) GPU-hours, wall ([\d,.]+) h \(([\d,.]+) days\) on 8 endpoints, ([\d,]+) model calls",
                  line)
    assert m, line
    assert m.groups() == (f"{want.gpu_hours:,.1f}", f"{want.wall_hours:,.1f}", f"{want.wall_hours / 24:,.1f}",
                          f"{want.model_calls:,}")
    ref = next(t for t in proc.stdout.splitlines() if t.startswith("reference layout"))
    assert f"{want.reference_gpu_hours:,.1f} GPU-hours, {want.reference_calls:,} model calls" in ref
    assert want.gpu_hours > 0 and want.reference_gpu_hours > want.gpu_hours
    # the assumptions the numbers rest on, printed beside them
    text = proc.stdout.split("assumptions:\n", 1)[1]
    for words in ("T1 = 214.9", "alpha = 0.0303", "T(32) = 3,546 tok/s", "no H200 figure", "prefill 22,925",
                  f"{PROMPT_TOKENS_PER_CALL:,} prompt + {COMPLETION_TOKENS_PER_CALL:,} generated",
                  "32 requests in flight per endpoint", "busy 0.9", "wall = GPU-hours / endpoints"):
        assert words in text, words
    doc = json.loads(sweep("plan", "--endpoints", "8", "--gpu", "h200", *cli_args(filters), "--json").stdout)
    assert doc["projection"] == want.__dict__ and doc["assumptions"]


@pytest.mark.slow
def test_a_filtered_plan_projects_less_than_the_full_grid_and_endpoints_divide_the_wall_time():
    full, part = expected({}), expected(FILTERED)
    assert 0 < part.gpu_hours < full.gpu_hours
    one = expected(FILTERED, endpoints=1)
    assert one.gpu_hours == part.gpu_hours and one.wall_hours == pytest.approx(8 * part.wall_hours)


def test_the_model_by_hand():
    assert throughput(1) == 75.0 and throughput(8) / throughput(1) == pytest.approx(6.6, abs=0.05)  # calibration
    assert GPUS["a100"] is A100 and throughput(32, GPUS["h100"]) == pytest.approx(2 * throughput(32))
    assert throughput(32, GPUS["h200"]) == pytest.approx(2 * 4.8 / 3.35 * throughput(32))
    cost = Cost(jobs=1, rollouts=100, shared_rollouts_saved=10, model_calls=1000, prompt_tokens=0,
                completion_tokens=0, shared_calls_saved=100)
    p = project(cost, A100, 4, 32, 0.5)
    decode = 1000 * 400 / (throughput(32) * 0.5)
    assert p.gpu_hours == pytest.approx((decode + 1000 * 1500 / 8000) / 3600) and p.wall_hours == p.gpu_hours / 4
    assert p.reference_calls == 1100 and p.reference_gpu_hours == pytest.approx(gpu_seconds(1100, 1) / 3600)
    with pytest.raises(ValueError):
        project(cost, A100, 0, 32, 0.9)


def rows(*args: str) -> dict[str, list[str]]:
    proc = sweep("plan", *args)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["job", "framework", "tables"]
    return {t.split()[1]: t.split() for t in lines[1:] if t.startswith(("run ", "SKIP"))}


@pytest.mark.slow
def test_the_listing_has_a_framework_column():
    table2 = rows("--tasks", "lcb", "--table", "2", "--methods", "gepa", "--seeds", "0")
    assert {k: v[2] for k, v in table2.items()} == {
        "gepa/lcb/single/qwen/0": "langgraph", "gepa/lcb/independent/qwen/0": "langgraph",
        "gepa/lcb/sequential_crewai/qwen/0": "crewai", "gepa/lcb/centralized_autogen/qwen/0": "autogen",
        "gepa/lcb/decentralized_openai_agents/qwen/0": "openai_agents"}
    native = rows("--runtime", "native", "--tasks", "lcb", "--table", "2", "--methods", "gepa", "--seeds", "0")
    assert native["gepa/lcb/single/qwen/0"][:3] == ["run", "gepa/lcb/single/qwen/0", "native"]
    assert native["gepa/lcb/centralized_autogen/qwen/0"][:3] == ["SKIP", "gepa/lcb/centralized_autogen/qwen/0",
                                                                 "autogen"]  # the framework it would need
    doc = json.loads(sweep("plan", "--tasks", "lcb", "--table", "2", "--methods", "gepa", "--seeds", "0",
                           "--json").stdout)
    assert {j["key"]: j["framework"] for j in doc["jobs"]}["gepa/lcb/sequential_crewai/qwen/0"] == "crewai"


@pytest.mark.slow
@pytest.mark.parametrize("args,words", [
    (["--endpoints", "0"], "--endpoints must be >= 1, got 0"),
    (["--endpoints", "-8"], "--endpoints must be >= 1, got -8"),
    (["--endpoints", "8", "--gpu", "v100"], "unknown --gpu 'v100'; known: a100, h100, h200"),
    (["--gpu", "h200"], "--gpu needs --endpoints N"),
    (["--endpoints", "8", "--busy", "1.5"], "--busy must be in (0, 1]"),
    (["--endpoints", "8", "--limit", "0"], "--limit must be >= 1"),
])
def test_bad_projection_options_are_one_line_exit_2(args, words):
    proc = sweep("plan", "--tasks", "bfcl", "--table", "3", *args)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and words in proc.stderr, proc.stderr
    assert proc.stdout == ""
