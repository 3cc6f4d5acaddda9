"""Synthetic result.json trees for the aggregate tests."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable

import pytest

from engine.aggregate.synthetic import synthetic_result, write_job

GRID = {"method": "gepa", "task": "hotpotqa", "topology": "sequential", "framework": "langgraph",
        "communication": "freeform", "team_size": 4, "task_model": "qwen"}


def make_result(seed: int, *, grid: dict[str, Any] | None = None, n_items: int = 20, rng_seed: int | None = None,
                **overrides: Any) -> dict[str, Any]:
    rng = random.Random(1000 * (rng_seed if rng_seed is not None else seed) + 7)
    return synthetic_result(dict(grid or GRID), seed, n_items=n_items, rng=rng, **overrides)


@pytest.fixture
def write_cell(tmp_path: Path) -> Callable[..., list[Path]]:
    """Write seeds of one cell under tmp_path/runs; returns the result.json paths."""

    def write(seeds=(0, 1, 2), *, root: Path | None = None, grid: dict[str, Any] | None = None,
              **overrides: Any) -> list[Path]:
        base = root or tmp_path / "runs"
        return [write_job(base, make_result(seed, grid=grid, **overrides)) for seed in seeds]

    return write
