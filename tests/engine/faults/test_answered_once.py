"""Every answer the endpoint sent is recorded, once, and never asked for again, in every topology, when some of
the team's calls fail: a failed member must not take its siblings' in-flight calls down with it (their answers
would be lost and re-sent by the attempt's same-seed retry). The framework runtimes have the same test in
tests/frameworks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import start_sim
from tests.engine.faults.matrix import (IMMEDIATE_FAULTS, TOPOLOGIES, assert_answered_once, assert_closed_ledger,
                                        assert_store_consistent, job_and_log, run_small, small_bench)

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")


@pytest.mark.parametrize("topology,n", TOPOLOGIES)
def test_each_answer_is_recorded_once_and_never_requested_again(tmp_path: Path, topology: str, n: int):
    server = start_sim(small_bench(), faults=IMMEDIATE_FAULTS)
    job = tmp_path / "job"
    _, log = job_and_log(server, lambda: run_small(job, server.base_url, topology, n, timeout=10.0))
    assert_closed_ledger(job)
    assert_store_consistent(job)
    assert_answered_once(log, job)
