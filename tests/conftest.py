"""Shared fixtures: the simulated OpenAI server over a fake benchmark, a fresh store, zero retry backoff."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.runner import RetryPolicy
from engine.sim.faults import FaultPlan
from engine.sim.policy import Policy
from engine.sim.server import SimServer
from tests.fakebench import FakeBench

NO_BACKOFF = RetryPolicy(base_delay=0.0, honour_retry_after=True)


@pytest.fixture
def fake_bench() -> FakeBench:
    return FakeBench()


def make_policy(bench: FakeBench) -> Policy:
    s = bench.splits()
    rows = bench.load_rows([*s.train, *s.validation, *s.test])
    bench.loads.clear()
    return Policy({"fake": (bench, rows)}, model_ids=("test-model",))


@pytest.fixture
def sim(fake_bench: FakeBench) -> Iterator[SimServer]:
    server = SimServer(make_policy(fake_bench))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def start_sim(bench: FakeBench, faults: FaultPlan | None = None, delay_s: float = 0.0,
              log_path: str | None = None, max_model_len: int | None = None) -> SimServer:
    server = SimServer(make_policy(bench), faults=faults, delay_s=delay_s, log_path=log_path,
                       max_model_len=max_model_len)
    server.start()
    return server


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the engine's production backend)."""
    return "asyncio"
