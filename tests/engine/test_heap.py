"""The job's phases run with the setup heap frozen out of the cyclic collector and a higher young-generation
threshold, and hand both back afterwards, also when a job fails (a process running many jobs must not accumulate
permanent objects nor keep the job's collector settings)."""

from __future__ import annotations

import gc

import pytest

import engine.job.run_job as run_job_module
from engine.heap import YOUNG_THRESHOLD, long_lived_heap_frozen
from tests.conftest import start_sim
from tests.engine.jobutil import run
from tests.fakebench import FakeBench


@pytest.fixture(autouse=True)
def no_leftover_freeze():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_block_freezes_what_is_alive_and_unfreezes_on_exit_and_on_error():
    alive = [{"row": i} for i in range(1000)]
    before = gc.get_threshold()
    with long_lived_heap_frozen():
        assert gc.get_freeze_count() >= len(alive)
        assert gc.get_threshold() == (max(before[0], YOUNG_THRESHOLD), *before[1:])
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
    with pytest.raises(RuntimeError, match="boom"):
        with long_lived_heap_frozen():
            raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before


@pytest.mark.parametrize("fail", [False, True])
def test_job_phases_run_frozen_and_the_heap_is_handed_back(tmp_path, monkeypatch, fail):
    seen: list[int] = []
    thresholds: list[int] = []
    phases = run_job_module.run_phases

    async def spy(ctx):
        seen.append(gc.get_freeze_count())
        thresholds.append(gc.get_threshold()[0])
        if fail:
            raise RuntimeError("phase failed")
        return await phases(ctx)

    monkeypatch.setattr(run_job_module, "run_phases", spy)
    server = start_sim(FakeBench(n_train=12, n_validation=20, n_test=30))
    try:
        if fail:
            with pytest.raises(RuntimeError, match="phase failed"):
                run(tmp_path / "job", server.base_url)
        else:
            assert run(tmp_path / "job", server.base_url)["test"]["delta_pp"] == 0.0
    finally:
        server.stop()
    assert len(seen) == 1 and seen[0] > 10_000  # modules, schemas and data were frozen while the phases ran
    assert thresholds == [YOUNG_THRESHOLD]  # fewer young passes while the phases allocate per call
    assert gc.get_freeze_count() == 0 and gc.get_threshold()[0] == 700
