from __future__ import annotations

from typing import Iterator

import pytest

from engine.sim.policy import Policy
from engine.sim.server import SimServer
from tests.engine.sim.fake_benchmark import make_policy


@pytest.fixture
def policy() -> Policy:
    return make_policy()


@pytest.fixture
def server(policy: Policy) -> Iterator[SimServer]:
    with SimServer(policy) as srv:
        yield srv
