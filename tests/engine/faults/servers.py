"""A simulated endpoint that a test can stop and start again on the same port (an endpoint process that dies and
is restarted), with triggers that fire on what the server has seen (never on wall-clock time)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from engine.sim.faults import FaultPlan
from engine.sim.server import SimServer
from tests.conftest import make_policy
from tests.fakebench import FakeBench


class Restartable:
    def __init__(self, bench: FakeBench, faults: FaultPlan | None = None):
        self.bench, self.faults = bench, faults
        self.server = SimServer(make_policy(bench), faults=faults)
        self.server.start()
        self.port = self.server.port
        self.url = self.server.base_url
        self.logs: list[list[dict[str, Any]]] = []  # the request log of each stopped incarnation

    def kill(self) -> None:
        self.server.stop()
        self.logs.append(self.server.log)  # complete: taken after the last request was answered

    def restart(self) -> None:
        self.server = SimServer(make_policy(self.bench), faults=self.faults, port=self.port)
        self.server.start()

    def all_entries(self) -> list[dict[str, Any]]:
        return [e for log in self.logs for e in log] + self.server.log

    def stop(self) -> None:
        if self.server._thread is not None:
            self.server.stop()


def when(condition: Callable[[], bool], action: Callable[[], None]) -> threading.Thread:
    """Run `action` once `condition()` holds (polled every 10 ms on a helper thread)."""
    def watch() -> None:
        deadline = time.monotonic() + 120
        while not condition():
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
        action()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def outage(endpoint: Restartable, seconds: float) -> Callable[[], None]:
    """Stop the endpoint process, keep it down for `seconds`, start it again on the same port."""
    def act() -> None:
        endpoint.kill()
        time.sleep(seconds)
        endpoint.restart()

    return act
