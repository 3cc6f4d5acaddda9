"""A job under an anyio cancel scope ends promptly with a consistent store, and re-running it finishes it with
the result of an uninterrupted run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from engine.job.run_job import run_job
from tests.conftest import start_sim
from tests.engine.faults.matrix import TOPOLOGIES, assert_store_consistent, cell, run_small, small_bench
from tests.engine.jobutil import comparable, config

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")


def cancelled_job(out: Path, url: str, topology: str, n: int, after_requests: int, server) -> bool:
    """Run the job, cancelling its scope once the server has seen `after_requests` requests; returns whether
    the scope was cancelled (the job did not finish first). A hang fails the guard deadline."""
    cfg = config(out, url, method="gepa", budget=10, timeout=5.0, cell=cell(topology, n), concurrency=4)

    async def main() -> bool:
        with anyio.fail_after(60):  # guard: a hang fails the test instead of blocking the suite
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    async def cancel_when_busy() -> None:
                        while len(server.log) < after_requests:
                            await anyio.sleep(0.005)
                        scope.cancel()

                    tg.start_soon(cancel_when_busy)
                    await run_job(cfg, small_bench())
                    tg.cancel_scope.cancel()
            return scope.cancelled_caught

    return anyio.run(main)


@pytest.mark.parametrize("topology,n", [TOPOLOGIES[0], ("decentralized", 4), ("centralized", 2)])
def test_cancelled_job_leaves_a_consistent_store_and_resumes(tmp_path: Path, topology: str, n: int):
    clean_server = start_sim(small_bench())
    try:
        expected = run_small(tmp_path / "clean", clean_server.base_url, topology, n, timeout=5.0, concurrency=4)
    finally:
        clean_server.stop()
    server = start_sim(small_bench(), delay_s=0.02)
    job = tmp_path / "job"
    try:
        assert cancelled_job(job, server.base_url, topology, n, 8, server)
        conn = sqlite3.connect(str(job / "card.sqlite"))
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            run_status = conn.execute("SELECT status FROM nodes WHERE level=0").fetchone()
            reasons = conn.execute("SELECT new_value FROM mutations WHERE target_id IN (SELECT node_id FROM nodes "
                                   "WHERE level=0) AND mutation_type='node.status_changed'").fetchall()
        finally:
            conn.close()
        assert run_status == ("cancelled",)
        assert '"cancelled_by_parent"' in reasons[-1][0]
        assert not (job / "result.json").exists()
        resumed = run_small(job, server.base_url, topology, n, timeout=5.0, concurrency=4)
    finally:
        server.stop()
    assert comparable(resumed) == comparable(expected)
    assert_store_consistent(job)
