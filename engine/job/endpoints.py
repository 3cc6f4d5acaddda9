"""Opening the task endpoints of a job or baseline run: the given OpenAI-compatible servers, or the built-in,
clearly labelled simulated endpoint when none is given; probed before anything is written."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager

from typing import Any

from engine.chat.endpoint import DEFAULT_MAX_OUTAGE_S, Endpoint, EndpointPool, Timeouts
from engine.store import Store

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


async def open_task_pool(stack: AsyncExitStack, endpoints: Sequence[str], *, task: str, data_dir: str | None,
                         model_id: str, concurrency: int, request_timeout: float, sim_delay_s: float = 0.0,
                         reflection_model: str = "simulated-reflection",
                         max_outage: float = DEFAULT_MAX_OUTAGE_S) -> tuple[EndpointPool, list[str]]:
    """The probed endpoint pool (closed with `stack`) and its base URLs; unreachable endpoints raise UsageError."""
    urls = list(endpoints)
    if not urls:
        print(SIM_BANNER, file=sys.stderr, flush=True)
        urls = [stack.enter_context(simulated_endpoint([task], data_dir, delay_s=sim_delay_s,
                                                       reflection_model=reflection_model))]
    timeouts = Timeouts(read=request_timeout)
    pool = EndpointPool([Endpoint(u, model_id, capacity=concurrency, timeouts=timeouts) for u in urls],
                        max_outage=max_outage)
    stack.push_async_callback(pool.aclose)
    await pool.probe()
    return pool, urls


async def watch_pools(stack: AsyncExitStack, store: Store, *pools: EndpointPool) -> None:
    """From here on (closed with `stack`, before the store closes): every wait of the pools is a run mutation in the
    card (ejections, re-admissions, Retry-After pauses, outages) and ejected endpoints are probed in the
    background."""

    async def record(kind: str, fields: dict[str, Any]) -> None:
        await store.mutate(kind, "run", store.run_id, actor="engine:endpoint_pool", new=fields,
                           reason="a wait for a healthy endpoint; not a rollout attempt")

    for pool in pools:
        pool.on_event = record
        await stack.enter_async_context(pool.health_probes())
