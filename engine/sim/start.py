"""The in-process simulated endpoint a job opens when it is given no task endpoint, registered with the job's
seam (engine/simulated.py) on import."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from engine.sim.build import build_policy
from engine.sim.server import SimServer
from engine.simulated import provide_simulated


@contextmanager
def start_simulated(tasks: list[str], data_dir: str | None, *, delay_s: float, reflection_model: str,
                    api_key: str | None) -> Iterator[str]:
    server = SimServer(build_policy(tasks, data_dir, reflection_model), delay_s=delay_s, api_key=api_key)
    server.start()
    try:
        yield server.base_url
    finally:
        server.stop()


provide_simulated(start_simulated)
