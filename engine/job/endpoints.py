"""Opening the endpoints of a job or baseline run: the given OpenAI-compatible servers, or the built-in,
clearly labelled simulated endpoint when none is given. Every endpoint passes the start-up check (one tiny chat
completion with its model id, engine/chat/preflight.py) before anything is written."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Any

from core.vocabulary import SIMULATED_REFLECTION_MODEL_ID
from engine.chat.auth import DEFAULT_API_KEY_ENV, api_key_from_env
from engine.chat.endpoint import DEFAULT_MAX_OUTAGE_S, Endpoint, EndpointPool, Timeouts
from engine.chat.preflight import DEFAULT_STARTUP_TIMEOUT_S, Target, check_endpoints, max_model_len
from engine.store import Store
from engine.log import get_logger
from engine.simulated import simulated_endpoint

log = get_logger("engine.job")

SIM_BANNER = ("SIMULATED ENDPOINT: no --task-endpoint given, so this job talks to the built-in simulated policy "
              "on 127.0.0.1. Its scores are NOT model scores; the job is marked non-conformant.")


async def open_task_pool(stack: AsyncExitStack, endpoints: Sequence[str], *, task: str, data_dir: str | None,
                         model_id: str, concurrency: int, request_timeout: float, sim_delay_s: float = 0.0,
                         reflection_model: str = SIMULATED_REFLECTION_MODEL_ID, api_key_env: str = DEFAULT_API_KEY_ENV,
                         startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S,
                         max_outage: float = DEFAULT_MAX_OUTAGE_S) -> tuple[EndpointPool, list[str]]:
    """The checked endpoint pool (closed with `stack`) and its base URLs; unusable endpoints raise UsageError."""
    urls = list(endpoints)
    if not urls:
        log.warning(SIM_BANNER, kind="simulated_endpoint")
        urls = [stack.enter_context(simulated_endpoint([task], data_dir, delay_s=sim_delay_s,
                                                       reflection_model=reflection_model))]
    key = api_key_from_env(api_key_env, required=False, what="--api-key-env")
    reports = await check_endpoints([Target(u, model_id, key, "task endpoint", api_key_env) for u in urls],
                                    startup_timeout)
    timeouts = Timeouts(read=request_timeout)
    pool = EndpointPool([Endpoint(u, model_id, capacity=concurrency, timeouts=timeouts, api_key=key)
                         for u in urls], max_outage=max_outage)
    for endpoint, report in zip(pool.endpoints, reports):
        endpoint.report = report
    stack.push_async_callback(pool.aclose)
    return pool, urls


async def open_reflection_endpoint(stack: AsyncExitStack, url: str, *, model_id: str, concurrency: int,
                                   read_timeout: float, key_env: str, fallback_key_env: str | None,
                                   startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S,
                                   max_outage: float = DEFAULT_MAX_OUTAGE_S) -> EndpointPool:
    """The checked reflection endpoint, as a one-endpoint pool. Its key comes from `key_env`; when that is unset and the reflection
    model is served by a task endpoint (`fallback_key_env` given), the task endpoints' key is used."""
    env = key_env
    key = api_key_from_env(key_env, required=False, what="--reflection-api-key-env")
    if key is None and fallback_key_env is not None:
        env, key = fallback_key_env, api_key_from_env(fallback_key_env, required=False, what="--api-key-env")
    target = Target(url, model_id, key, "reflection endpoint", env)
    (report,) = await check_endpoints([target], startup_timeout)
    endpoint = Endpoint(url, model_id, capacity=concurrency, timeouts=Timeouts(read=read_timeout), api_key=key)
    endpoint.report = report
    endpoint.max_model_len = await max_model_len(target, startup_timeout)  # the reflection client fits to it
    pool = EndpointPool([endpoint], max_outage=max_outage)  # outage-aware like the task endpoints
    stack.push_async_callback(pool.aclose)
    return pool
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
