"""Each method's job under ~10% injected faults on the real simulated endpoint (4-agent BFCL teams): no
infrastructure-failed record enters a score. The ledger runner hands the method every infra-failed record with a
poison score (tests/optimizers/fakes.PoisonScore): a method reading it as a number fails the job, so the test."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from core.coalition import MemberMask
from core.models import PromptBundle, RolloutRecord, Row
from engine.job.optimization import LedgerRunner
from engine.job.run_job import run_job
from engine.sim.build import build_policy
from engine.sim.faults import FaultPlan
from engine.sim.server import SimServer
from tests.engine.faults.matrix import job_and_log
from tests.optimizers.fakes import PoisonScore
from tests.optimizers.optjob import read
from tests.optimizers.test_answered_once import config
from tests.optimizers.test_jobs import check_closed_ledger

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

FAULTS = FaultPlan(rates={"http_500": 0.06, "http_503": 0.02, "reset": 0.02, "malformed_json": 0.02}, seed=11)


@pytest.mark.parametrize("method", ["gepa", "mipro", "mapro", "maspo"])
def test_no_infrastructure_failure_enters_a_score_under_faults(tmp_path: Path, method: str, monkeypatch):
    real = LedgerRunner._run
    handed: list[int] = []

    async def poisoned(self: LedgerRunner, rows: Sequence[Row], bundle: PromptBundle, iteration: int | str,
                       seed_slot: str, control: MemberMask | None = None) -> list[RolloutRecord]:
        records = await real(self, rows, bundle, iteration, seed_slot, control)
        out = [r.model_copy(update={"score": PoisonScore(0.0)}) if r.status.value == "infrastructure_failure"
               else r for r in records]
        handed.append(sum(r is not s for r, s in zip(records, out)))
        return out

    monkeypatch.setattr(LedgerRunner, "_run", poisoned)
    server = SimServer(build_policy(["bfcl"]), faults=FAULTS).start()
    out = tmp_path / "job"
    job_and_log(server, lambda: anyio.run(run_job, config(out, server.base_url, method, "sequential")))
    opt = read(out, "optimization.json")
    assert opt["status"] == "completed", opt.get("error")
    check_closed_ledger(opt["budget"], 600)
    assert sum(handed) >= 3, f"only {sum(handed)} infrastructure-failed records reached the method"
