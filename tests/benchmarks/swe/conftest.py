from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.swe.repos import make_mirror


@pytest.fixture
def mirror(tmp_path: Path) -> tuple[Path, str]:
    return make_mirror(tmp_path)
