"""The sweep's endpoints: task endpoints from flags, `TASK_ENDPOINTS` or a file; the reflection endpoint from a flag
or `REFLECTION_MODEL_BASE_URL`; or the built-in simulated endpoint (`--simulated`). All of them are checked with
a real 1-token chat completion (engine/chat/preflight.py) before any job starts, then shared by every job: one
`Endpoint` (one in-flight limit) per URL across the whole sweep."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import UsageError
from engine.chat.auth import DEFAULT_API_KEY_ENV, DEFAULT_REFLECTION_API_KEY_ENV, api_key_from_env, check_endpoint_url
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts
from engine.chat.health import DEFAULT_MAX_OUTAGE_S, EventSink
from engine.chat.preflight import Target, check_endpoints, max_model_len
from core.artifacts import EndpointReport
from core.protocol import REFLECTION_TIMEOUT_S


@dataclass(frozen=True)
class EndpointSpec:
    task_urls: tuple[str, ...]
    reflection_url: str | None
    limit: int  # in-flight requests per endpoint, across all jobs
    max_outage: float = DEFAULT_MAX_OUTAGE_S  # how long requests wait while no endpoint is healthy
    events: Path | None = None  # the shared pools' wait events (ejections, 429 pauses, outages) as JSON lines


def task_urls_from(flags: list[str] | None, file: str | None) -> tuple[str, ...]:
    """Flags, else the file (one URL a line, # comments), else TASK_ENDPOINTS / VLLM_BASE_URL."""
    urls: list[str] = list(flags or [])
    if not urls and file:
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--endpoints-file {file}: {exc.strerror or exc}") from None
        urls = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
        urls = [u for u in urls if u]
        if not urls:
            raise UsageError(f"--endpoints-file {file} lists no endpoint")
    if not urls:
        env = os.environ.get("TASK_ENDPOINTS") or os.environ.get("VLLM_BASE_URL") or ""
        urls = [u.strip() for u in env.split(",") if u.strip()]
    for u in urls:
        check_endpoint_url(u, "--task-endpoint")
    if len(set(urls)) != len(urls):
        raise UsageError("a task endpoint is listed twice")
    return tuple(urls)


@contextmanager
def simulated(tasks: list[str], data_dir: str | None, delay_s: float) -> Iterator[str]:
    import engine.sim.start  # noqa: F401  (provides the starter)
    from engine.simulated import simulated_endpoint

    with simulated_endpoint(tasks, data_dir, delay_s=delay_s) as url:
        yield url


def event_sink(path: Path | None) -> EventSink | None:
    """The shared pools' events go to one JSON-lines file of the sweep (a job's card records only its own calls:
    with one pool for many jobs, a wait belongs to the sweep, not to one job)."""
    if path is None:
        return None

    async def record(kind: str, fields: dict[str, Any]) -> None:
        line = json.dumps({"time": time.time(), "event": kind, **fields}, sort_keys=True, default=str)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    return record


@dataclass(frozen=True)
class Checked:
    """What the start-up check heard (engine/chat/preflight.py): each task endpoint's report in order, the reflection
    endpoint's (None: not checked) and its context length. The sweep checks once per pass over its jobs and hands
    this to the pools it opens (local or on Ray workers: it pickles), which then check nothing again."""

    task: tuple[EndpointReport, ...]
    reflection: EndpointReport | None = None
    reflection_max_model_len: int | None = None


def _targets(spec: EndpointSpec, model_id: str, reflection_model: str | None) -> tuple[list[Target], Target | None]:
    key = api_key_from_env(DEFAULT_API_KEY_ENV, required=False, what="OPENAI_API_KEY")
    tasks = [Target(u, model_id, key, "task endpoint") for u in spec.task_urls]
    if spec.reflection_url is None or reflection_model is None:
        return tasks, None
    rkey = api_key_from_env(DEFAULT_REFLECTION_API_KEY_ENV, required=False, what="REFLECTION_API_KEY") or key
    return tasks, Target(spec.reflection_url, reflection_model, rkey, "reflection endpoint")


async def preflight(spec: EndpointSpec, *, model_id: str, reflection_model: str | None,
                    startup_timeout: float) -> Checked:
    """The start-up check of every endpoint (UsageError naming the first failing one)."""
    tasks, reflection = _targets(spec, model_id, reflection_model)
    reports = await check_endpoints(tasks + ([reflection] if reflection is not None else []), startup_timeout)
    if reflection is None:
        return Checked(tuple(reports))
    return Checked(tuple(reports[:-1]), reports[-1], await max_model_len(reflection, startup_timeout))


async def open_shared(stack: AsyncExitStack, spec: EndpointSpec, *, model_id: str, reflection_model: str | None,
                      request_timeout: float, startup_timeout: float, probes: bool = True,
                      checked: Checked | None = None) -> tuple[EndpointPool, EndpointPool | None]:
    """The checked, shared outage-aware pool (engine/chat/endpoint.py: per-endpoint health, in-flight limit,
    Retry-After backpressure) and the reflection endpoint's one-endpoint pool (None if no job needs one), closed
    with `stack`; with `probes`, ejected endpoints are probed in the background while the stack is open.
    `checked`: the sweep's start-up check of this pass (else the endpoints are checked here)."""
    tasks, target = _targets(spec, model_id, reflection_model)
    if checked is None or (target is not None and checked.reflection is None):
        checked = await preflight(spec, model_id=model_id, reflection_model=reflection_model,
                                  startup_timeout=startup_timeout)
    sink = event_sink(spec.events)
    pool = EndpointPool([Endpoint(t.base_url, model_id, capacity=spec.limit, timeouts=Timeouts(read=request_timeout),
                                  api_key=t.api_key) for t in tasks], max_outage=spec.max_outage, on_event=sink)
    for endpoint, report in zip(pool.endpoints, checked.task):  # what each said about itself: each job records it
        endpoint.report = report
    stack.push_async_callback(pool.aclose)
    reflection = None
    if target is not None:
        reflection = EndpointPool([Endpoint(target.base_url, target.model_id, capacity=spec.limit,
                                            timeouts=Timeouts(read=REFLECTION_TIMEOUT_S), api_key=target.api_key)],
                                  max_outage=spec.max_outage, on_event=sink)
        reflection.endpoints[0].report = checked.reflection
        reflection.endpoints[0].max_model_len = checked.reflection_max_model_len
        stack.push_async_callback(reflection.aclose)
    if probes:
        for p in (pool, reflection):
            if p is not None:
                await stack.enter_async_context(p.health_probes())
    return pool, reflection
