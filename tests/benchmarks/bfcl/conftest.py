"""Fixtures for the BFCL tests: the benchmark object and the fixture rows."""

from __future__ import annotations

import pytest

from benchmarks.bfcl import BENCHMARK
from core.models import Row
from tests.benchmarks.bfcl.helpers import FIXTURE_IDS, FIXTURES


@pytest.fixture
def bench():
    return BENCHMARK


@pytest.fixture
def rows() -> dict[str, Row]:
    loaded = BENCHMARK.load_rows(list(FIXTURE_IDS), data_dir=str(FIXTURES))
    return {row.id: row for row in loaded}
