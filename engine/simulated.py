"""The seam between a job and the simulated endpoint: the job asks for one, the sim provides the starter.

A job (engine/job/endpoints.py) that is given no task endpoint opens the labelled simulated endpoint through
`simulated_endpoint`; it never imports the sim itself. `engine/sim/start.py` registers the starter when the sim
is imported (the CLI, the sweep and the test fixtures import it), so the arrow runs from the sim down to this
slot, not from the job up to the sim.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from core.errors import UsageError
from core.vocabulary import SIMULATED_REFLECTION_MODEL_ID


class SimulatedStarter(Protocol):
    def __call__(self, tasks: list[str], data_dir: str | None, *, delay_s: float, reflection_model: str,
                 api_key: str | None) -> AbstractContextManager[str]:
        """A context manager serving the simulated endpoint while it is open; it yields the base URL."""
        ...


_starters: list[SimulatedStarter] = []


def provide_simulated(starter: SimulatedStarter) -> None:
    """Register the simulated endpoint's starter (the last one registered wins)."""
    _starters[:] = [starter]


def simulated_endpoint(tasks: list[str], data_dir: str | None, delay_s: float = 0.0,
                       reflection_model: str = SIMULATED_REFLECTION_MODEL_ID,
                       api_key: str | None = None) -> AbstractContextManager[str]:
    """The in-process simulated endpoint; with `api_key` it answers 401 to requests without that key."""
    if not _starters:
        raise UsageError("no --task-endpoint given and no simulated endpoint is wired in (import engine.sim.start)")
    return _starters[0](tasks, data_dir, delay_s=delay_s, reflection_model=reflection_model, api_key=api_key)
