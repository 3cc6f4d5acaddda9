"""Helpers for the BFCL tests: fixture files in the bfcl-eval v4 layout (a few rows per category)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bfcl.checker import INSTALL_HINT, bfcl_eval_available

FIXTURES = Path(__file__).parent / "fixtures"

# protocol ID -> row id inside the fixture files
FIXTURE_IDS = {
    "simple_0": "simple_python_0", "simple_1": "simple_python_1", "simple_2": "simple_python_2",
    "simple_3": "simple_python_3",
    "multiple_0": "multiple_0", "multiple_1": "multiple_1", "multiple_2": "multiple_2",
    "parallel_0": "parallel_0", "parallel_1": "parallel_1", "parallel_2": "parallel_2",
    "parallel_multiple_0": "parallel_multiple_0", "parallel_multiple_1": "parallel_multiple_1",
    "parallel_multiple_2": "parallel_multiple_2",
}

requires_checker = pytest.mark.skipif(not bfcl_eval_available(),
                                      reason=f"bfcl_eval not installed ({INSTALL_HINT})")


def raw_entries(file_category: str, answers: bool = False) -> dict[str, dict]:
    path = FIXTURES / ("possible_answer" if answers else "") / f"BFCL_v4_{file_category}.json"
    return {item["id"]: item for item in map(json.loads, path.read_text().splitlines())}
