"""One worker process of `sweep run --workers N` (started by engine/sweep/workers.py; not a user command).

It reads its set-up (a JSON file named by its argument: endpoints, settings, the broker's socket), then job
orders (`{"run": spec}` lines) from stdin, runs every order as a task of its event loop on one checked, shared
endpoint pool whose in-flight slots are the node-wide ones of the parent's broker (engine/sweep/broker.py), and
writes JSON lines to its original stdout: `{"key", "progress"}` (throttled snapshots), `{"key", "finished":
headline}` or `{"key", "error": line}`. Anything else that writes to stdout is sent to stderr, so the channel carries only these.
End of stdin or a failed write to the parent (the parent is gone, even by kill -9), SIGTERM and SIGINT stop every
job as cancellation does in one process: their rows stay `running` and the next `sweep run` resumes them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pickle
import signal
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any, BinaryIO

import anyio

from engine.chat.routing import default_routing
from engine.progress import ProgressSnapshot
from engine.sweep.broker import BrokerClient
from engine.sweep.endpoints import EndpointSpec, open_shared
from engine.sweep.evalcache import EvaluationCache
from engine.sweep.jobcall import JobSettings, headline, run_spec
from engine.sweep.plan import JobSpec


def spec_from(d: dict[str, Any]) -> JobSpec:
    return JobSpec(**{**d, "tables": tuple(d["tables"])})


def spec_dict(spec: JobSpec) -> dict[str, Any]:
    return {k: v for k, v in asdict(spec).items() if k != "extra"}


def endpoints_from(d: dict[str, Any]) -> EndpointSpec:
    return EndpointSpec(task_urls=tuple(d["task_urls"]), reflection_url=d["reflection_url"], limit=int(d["limit"]),
                        max_outage=float(d["max_outage"]), events=Path(d["events"]) if d["events"] else None)


def endpoints_dict(spec: EndpointSpec) -> dict[str, Any]:
    return {"task_urls": list(spec.task_urls), "reflection_url": spec.reflection_url, "limit": spec.limit,
            "max_outage": spec.max_outage, "events": str(spec.events.resolve()) if spec.events else None}


class ParentChannel:
    """The worker's protocol channel to its parent. A write that fails (the parent is gone, even by kill -9, before
    this worker has read the end of its stdin) raises nothing into the job that was reporting: it is not the job's
    failure and must never be recorded as one (a progress snapshot written from inside a method would otherwise
    become the method's program_failure in optimization.json, for good). It calls `on_gone` instead (the worker
    stops every job as at the end of stdin: their rows stay `running` for the next `sweep run`) and drops every
    later message."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.gone = False
        self.on_gone: Callable[[], None] | None = None

    def emit(self, message: dict[str, Any]) -> None:
        if self.gone:
            return
        try:
            self.out.write((json.dumps(message, default=str) + "\n").encode())
        except (OSError, ValueError):
            self.gone = True
            if self.on_gone is not None:
                self.on_gone()


async def serve(init: dict[str, Any], out: BinaryIO) -> None:
    from engine.sweep.local import error_line

    settings = JobSettings(**init["settings"])
    endpoints = endpoints_from(init["endpoints"])
    runs = Path(init["sweep_dir"]) / "runs"
    cache_dir = init["cache_dir"]

    parent = ParentChannel(out)
    emit = parent.emit

    async with AsyncExitStack() as stack:
        with default_routing(settings.routing):  # `sweep run --routing`, as the parent's settings say
            pool, reflection = await open_shared(
                stack, endpoints, model_id=init["model_id"],
                reflection_model=settings.reflection_model if init["needs_reflection"] else None,
                request_timeout=settings.request_timeout, startup_timeout=init["startup_timeout"],
                checked=pickle.loads(base64.b64decode(init["checked"])) if init.get("checked") else None)
        broker = BrokerClient(len(pool.endpoints) + (reflection is not None))
        await broker.connect(init["broker"])
        stack.callback(broker.close)
        for i, endpoint in enumerate(pool.endpoints + (reflection.endpoints if reflection is not None else [])):
            endpoint.limiter = broker.slots(i, endpoint.capacity)  # type: ignore[assignment]

        async def job(spec: JobSpec) -> None:
            def report(snapshot: ProgressSnapshot) -> None:
                emit({"key": spec.key, "progress": asdict(snapshot)})

            cache = EvaluationCache(Path(cache_dir), spec.key) if cache_dir else None
            try:
                result = await run_spec(spec, runs, settings, pool, reflection, cache, report)
            except Exception as exc:  # a job's failure is data for the parent
                emit({"key": spec.key, "error": error_line(exc)})
                return
            emit({"key": spec.key, "finished": headline(result), "delta_pp": result.test.delta_pp})

        loop = asyncio.get_running_loop()
        stdin = asyncio.StreamReader(limit=1 << 24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin.buffer)
        async with anyio.create_task_group() as tg:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, tg.cancel_scope.cancel)
            parent.on_gone = tg.cancel_scope.cancel

            async def broker_lost() -> None:
                await broker.lost.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(broker_lost)
            while line := await stdin.readline():
                tg.start_soon(job, spec_from(json.loads(line)["run"]))
            tg.cancel_scope.cancel()  # stdin closed: the parent is gone or done


def main() -> None:
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # stray prints go to stderr; fd `out` carries only this protocol
    init = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    try:
        anyio.run(serve, init, out)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
