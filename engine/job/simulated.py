"""Starting the built-in, clearly labelled simulated endpoint for a job run without --task-endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

SIM_BANNER = ("SIMULATED ENDPOINT: no --task-endpoint given, so this job talks to the built-in simulated policy "
              "on 127.0.0.1. Its scores are NOT model scores; the job is marked non-conformant.")


@contextmanager
def simulated_endpoint(tasks: list[str], data_dir: str | None, delay_s: float = 0.0,
                       reflection_model: str = "simulated-reflection") -> Iterator[str]:
    from engine.sim.build import build_policy
    from engine.sim.server import SimServer

    server = SimServer(build_policy(tasks, data_dir, reflection_model), delay_s=delay_s)
    server.start()
    try:
        yield server.base_url
    finally:
        server.stop()
