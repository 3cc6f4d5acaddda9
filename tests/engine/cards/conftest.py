"""Real jobs (fake benchmark, simulated endpoint) shared by the card tests of one session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.sim.faults import FaultPlan, ScheduledFault
from tests.engine.cards.cardutil import job

# Every request for test row q40 gets HTTP 500: its rollouts end as infrastructure_failure after 3 attempts.
INFRA_ROW = "q40"


@pytest.fixture(scope="session")
def clean_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("cards") / "clean"
    return out, job(out)


@pytest.fixture(scope="session")
def faulty_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("cards") / "faulty"
    plan = FaultPlan(schedule=[ScheduledFault(kind="http_500", row_id=INFRA_ROW)])
    return out, job(out, plan)
