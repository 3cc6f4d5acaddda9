"""Benchmark of a full 600-rollout optimizer job on the simulated endpoint (50 ms per request by default).

    python bench/optimizer.py [--method gepa|mipro|mapro|maspo|tavo|hivemind|all] [--delay-ms 50] [--concurrency 64]
                              [--cell task=bfcl,topology=sequential,team_size=4] [--keep DIR] [--tracemalloc]
                              [--sim-in-process] [--runs N]

Prints figures only (asserts nothing about time), per method: wall time of the optimize phase and of the whole job,
and the CPU time this process spent during the optimize phase (less sensitive than wall time to other load);
the endpoint-bound floor measured in the same run, i.e. the time an engine with zero overhead would need for the
same sequence of endpoint work, in request delays: each rollout batch, the longest-processing-time-first (LPT)
schedule of its rollouts' chains of live requests (a rollout's calls are sequential) on `--concurrency` slots, since
`--concurrency` bounds the rollouts in flight as well as the requests (for 150 rollouts of 4 calls on 64 slots:
ceil(150 / 64) x 4 = 12 delays, not ceil(600 / 64) = 10, which would need more than 64 rollouts in flight); each
concurrent group of judge / probe calls, the LPT schedule of its thunks' chains of live requests on min(its limit,
capacity) slots (a thunk answered from the store chains no request); each other live request (reflection,
proposals), one delay. LPT is exact for chains of equal length and within 4/3 of the optimum otherwise. Then the
ratio optimize wall / floor (target <= 1.3). That floor gives the endpoint no service time; the measured floor
(bench/floor.py `Replay`) is the wall time of the same request bodies, in the same segments, chains and slots, sent
again after the job by a bare aiohttp client to the same endpoint process, and the ratio against it is printed too.
The CPU-matched replay sends them once more with the client busy, after each response, for the optimize phase's CPU
divided by its requests: what a client that spends as much CPU per request but has no other overhead needs, which
separates the engine's CPU per call (the ratio of this replay to the measured floor) from how it schedules that
work (the ratio of the optimize wall to this replay).
Also the share of optimize wall time with at least one endpoint request outstanding; the time-averaged number of
rollouts and of requests in flight; and peak memory (the process's max RSS; with --tracemalloc also the peak of
Python allocations).

The endpoint: the labelled simulated endpoint (`python -m engine serve-sim`, task and reflection model) in a process
of its own, as a real endpoint is (a vLLM server is another process on other hardware): its request handling is the
endpoint's service time, which the floor does not count, so on a thread of this process it would be charged to the
engine through the GIL. `--sim-in-process` runs it on a thread of this process instead (the job's built-in
simulated endpoint; its CPU then counts as engine time). Both give the same optimization, selection and test
artifacts (job.json / result.json differ only in endpoint_kind and the non-conformance reason).
Data: the real BFCL split (bfcl-eval package data: 150 train / 50 validation / 100 test).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import optimizers.mapro.potentials as potentials  # noqa: E402
import optimizers.mapro.method as mapro_method  # noqa: E402
import optimizers.maspo.credit as credit  # noqa: E402
import optimizers.maspo.method as maspo_method  # noqa: E402
import optimizers.tavo.credit as tavo_credit  # noqa: E402
import optimizers.tavo.method as tavo_method  # noqa: E402
from engine.chat.endpoint import Endpoint  # noqa: E402
from engine.job.config import JobConfig, build_config  # noqa: E402
from engine.job.optimization import LedgerRunner  # noqa: E402
import engine.job.run_job as job_module  # noqa: E402
from engine.job.context import JobContext  # noqa: E402
from engine.job.run_job import run_job  # noqa: E402
import engine.sim.start  # noqa: E402, F401  (provides the simulated endpoint to a job given none)
from engine.runner import RetryPolicy, Runner  # noqa: E402
from core.cell import parse_cell  # noqa: E402
from core.errors import UsageError  # noqa: E402
from core.vocabulary import SIMULATED_REFLECTION_MODEL_ID, SIMULATED_TASK_MODEL_ID  # noqa: E402
from bench.floor import CHAIN, THUNK, Floor, InFlight, Replay  # noqa: E402
from core.canonical import canonical_json  # noqa: E402

METHODS = ("gepa", "mipro", "mapro", "maspo", "tavo", "hivemind")
# hivemind runs masked coalitions, which only the centralized topology honours: it runs on this cell unless
# --cell already names a centralized one
MASK_CELL = "task={task},topology=centralized,team_size=4"
ROOT = Path(__file__).resolve().parents[1]


def instrument(requests: InFlight, rollouts: InFlight, floor: Floor, replay: Replay, phase: dict[str, float]) -> None:
    chat, rollout, optimize, run, gather = (Endpoint.chat, Runner._rollout, job_module.optimize, LedgerRunner._run,
                                           potentials.gather)

    async def timed_chat(self: Endpoint, body: dict[str, Any], encoded: str | None = None) -> Any:
        if requests.active:
            replay.request((canonical_json(body) if encoded is None else encoded).encode("utf-8"),
                           floor.in_batch > 0, floor.group_chains)
            floor.request()
        requests.up()
        try:
            return await chat(self, body, encoded)
        finally:
            requests.down()

    async def timed_run(self: LedgerRunner, *args: Any, **kwargs: Any) -> Any:
        if floor.in_batch == 0:
            replay.begin("batch", floor.capacity)
        floor.batch_started()
        records: list[Any] = []
        try:
            records = await run(self, *args, **kwargs)
        finally:
            floor.batch_done(records)
            if floor.in_batch == 0:
                replay.end("batch")
        return records

    def traced(chains: list[int], i: int, thunk: Any) -> Any:
        async def run() -> Any:
            THUNK.set((chains, i))  # in this thunk's task only (each task runs in a copy of the context)
            return await thunk()
        return run

    async def timed_gather(thunks: Any, limit: int) -> Any:
        chains = floor.group_started(len(thunks))
        if chains is None:
            return await gather(thunks, limit)
        replay.begin("group", limit, len(thunks))
        try:
            return await gather([traced(chains, i, t) for i, t in enumerate(thunks)], limit)
        finally:
            floor.group_done(limit)
            replay.end("group")

    async def timed_rollout(self: Runner, *args: Any, **kwargs: Any) -> Any:
        rollouts.up()
        CHAIN.set(replay.rollout_chain())  # in this rollout's task only
        try:
            return await rollout(self, *args, **kwargs)
        finally:
            rollouts.down()

    async def timed_optimize(ctx: JobContext) -> Any:
        requests.start()
        rollouts.start()
        t0, cpu0 = time.perf_counter(), time.process_time()
        try:
            return await optimize(ctx)
        finally:
            phase["optimize"], phase["optimize_cpu"] = time.perf_counter() - t0, time.process_time() - cpu0
            requests.stop()
            rollouts.stop()

    Endpoint.chat = timed_chat  # type: ignore[method-assign]
    LedgerRunner._run = timed_run  # type: ignore[method-assign]
    potentials.gather = credit.gather = timed_gather  # type: ignore[assignment]
    maspo_method.gather = mapro_method.gather = timed_gather  # type: ignore[assignment]
    tavo_method.gather = tavo_credit.gather = timed_gather  # type: ignore[assignment]
    Runner._rollout = timed_rollout  # type: ignore[method-assign]
    job_module.optimize = timed_optimize  # the optimize phase as run_job calls it


@contextmanager
def sim_process(task: str, delay_ms: float) -> Iterator[str]:
    """`python -m engine serve-sim` on an ephemeral 127.0.0.1 port in a process of its own; yields its base URL."""
    errors = tempfile.TemporaryFile("w+")  # its stderr: a file, which never fills and blocks it as a pipe would
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve-sim", "--port", "0", "--tasks", task,
                             "--delay-ms", str(delay_ms)], cwd=ROOT, stdout=subprocess.PIPE, stderr=errors,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            code = proc.wait()
            errors.seek(0)
            reason = (errors.read().strip().splitlines() or ["no message"])[-1]
            raise UsageError(f"the simulated endpoint did not start (exit code {code}): {reason}")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        errors.close()


def method_cell(method: str, cell: str) -> str:
    if method != "hivemind" or parse_cell(cell).topology == "centralized":
        return cell
    return MASK_CELL.format(task=parse_cell(cell).task)


def job_config(method: str, args: argparse.Namespace, out: Path, url: str | None) -> JobConfig:
    cell = method_cell(method, args.cell)
    common: dict[str, Any] = {"cell": cell, "method": method, "seed": 0, "out": str(out), "budget": 600,
                              "data_dir": None, "concurrency": args.concurrency, "quiet": True}
    if url is None:  # the job's built-in simulated endpoint, on a thread of this process
        cfg = build_config(task_endpoints=None, model_id=None, **common)
    else:
        cfg = build_config(task_endpoints=[url], model_id=SIMULATED_TASK_MODEL_ID, reflection_endpoint=url,
                           reflection_model=SIMULATED_REFLECTION_MODEL_ID, **common)
    return JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0), "sim_delay_s": args.delay_ms / 1000})


@contextmanager
def endpoint_for(args: argparse.Namespace, task: str) -> Iterator[str | None]:
    """The simulated endpoint's URL, or None for the job's built-in one (--sim-in-process)."""
    if args.sim_in_process:
        yield None
    else:
        with sim_process(task, args.delay_ms) as url:
            yield url


Ratios = tuple[float, float | None, float | None]


def bench_method(method: str, args: argparse.Namespace, run: int = 0) -> Ratios:
    """One job of `method`, its figures printed; optimize wall / floor, / measured floor, / CPU-matched replay."""
    requests, rollouts = InFlight(), InFlight()
    phase: dict[str, float] = {}
    floor = Floor(args.delay_ms / 1000, args.concurrency)
    replay = Replay(args.concurrency)
    instrument(requests, rollouts, floor, replay, phase)
    with tempfile.TemporaryDirectory() as tmp, endpoint_for(args, parse_cell(args.cell).task) as url:
        kept = method if args.runs == 1 else f"{method}.{run + 1}"  # each run a new job, never a resumed one
        out = Path(args.keep) / kept if args.keep else Path(tmp) / "job"
        cfg = job_config(method, args, out, url)
        if args.tracemalloc:
            tracemalloc.start()
        t0 = time.perf_counter()
        try:
            result = anyio.run(run_job, cfg).to_json()
        finally:
            total = time.perf_counter() - t0
            peak = tracemalloc.get_traced_memory()[1] if args.tracemalloc else None
            tracemalloc.stop()
        measured = matched = None
        if url is not None and replay.requests:
            measured = anyio.run(replay.run, f"{url}/chat/completions")
            per_request = phase["optimize_cpu"] / replay.requests  # the engine's CPU per live request
            matched = anyio.run(replay.run, f"{url}/chat/completions", per_request)
    opt, wall = result["optimization"], phase["optimize"]
    usage = opt["usage"]
    calls = {k: usage.get(k, {}).get("model_calls", 0) for k in ("reflection", "judge", "probe")}
    where = "in-process thread" if args.sim_in_process else "own process"
    print(f"method={method} cell={method_cell(method, args.cell)} delay={args.delay_ms:.0f}ms concurrency={args.concurrency} sim={where} "
          f"stop={opt['stop_reason']} charged={opt['budget']['charged']} uncharged calls={calls}")
    threads = "all its threads, the simulated endpoint's included" if args.sim_in_process else "all its threads"
    print(f"  wall: optimize {wall:.2f} s, whole job {total:.2f} s; CPU of this process during optimize "
          f"{phase['optimize_cpu']:.2f} s ({threads})")
    ratio = f"{wall / floor.seconds:.2f}" if floor.seconds else "n/a (no delay)"
    print(f"  endpoint-bound floor (same run): {floor.batches} rollout batches + {floor.groups} concurrent call groups "
          f"+ {floor.singles} single requests = {floor.seconds:.2f} s; optimize wall / floor = {ratio} "
          "(target <= 1.30)")
    if measured is None or matched is None:
        print("  measured endpoint floor: n/a (--sim-in-process: the endpoint shares this process)")
    else:
        print(f"  measured endpoint floor (the same request bodies, segments, chains and slots sent again by a bare "
              f"client to the same endpoint process; {replay.requests} requests in {len(replay.segments)} segments): "
              f"{measured:.2f} s = {measured / floor.seconds:.2f}x the computed floor; "
              f"optimize wall / measured floor = {wall / measured:.2f} (target <= 1.30)")
        print(f"  CPU-matched replay (the same, the client also busy {1000 * per_request:.2f} ms after each response: "
              f"the optimize phase's CPU per request): {matched:.2f} s; optimize wall / it = {wall / matched:.2f} "
              "(no target: at 1.0 the engine's wall is what its CPU per request allows)")
    print(f"  optimize wall share waiting on endpoints {100 * requests.busy / wall:.1f}%; in flight (time-averaged): "
          f"rollouts {rollouts.area / wall:.2f}, requests {requests.area / wall:.2f}")
    sel = result["selection"]
    print(f"  validation: baseline {sel['baseline_validation_score']} incumbent {sel['incumbent_validation_score']} "
          f"-> {sel['selected_candidate']}; test delta_pp {result['test']['delta_pp']}")
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    traced = f"tracemalloc peak {peak / 2**20:.1f} MiB, " if peak is not None else ""
    server = "server thread included" if args.sim_in_process else "the endpoint's process not included"
    print(f"  peak memory: {traced}max RSS {rss_mb:.1f} MiB (process so far, {server})")
    return ((wall / floor.seconds if floor.seconds else float("nan")), None if measured is None else wall / measured,
            None if matched is None else wall / matched)


def summary(method: str, ratios: list[Ratios]) -> str:
    """Median and range of the ratios of several runs (this machine's noise is of the order of the margins)."""
    def spread(values: list[float]) -> str:
        return f"median {statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"
    measured = [m for _, m, _ in ratios if m is not None]
    matched = [m for _, _, m in ratios if m is not None]
    line = f"{method}: {len(ratios)} runs; optimize wall / floor {spread([c for c, _, _ in ratios])}"
    line += (f"; / measured floor {spread(measured)}" if measured else "") + " (target <= 1.30)"
    return line + (f"; / CPU-matched replay {spread(matched)}" if matched else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--delay-ms", type=float, default=50.0)
    p.add_argument("--method", default="all", choices=(*METHODS, "all"))
    p.add_argument("--cell", default="task=bfcl,topology=sequential,team_size=4")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--runs", type=int, default=1, help="jobs per method; with more than one, a median line at the end")
    p.add_argument("--keep", help="directory to keep the job directories in (default: temporary ones)")
    p.add_argument("--sim-in-process", action="store_true",
                   help="run the simulated endpoint on a thread of this process (its CPU then counts as engine time)")
    p.add_argument("--tracemalloc", action="store_true",
                   help="also trace Python allocations (peak heap; slows the engine, so it skews the time shares)")
    args = p.parse_args(argv)
    originals = (Endpoint.chat, LedgerRunner._run, potentials.gather, Runner._rollout, job_module.optimize)
    if args.runs < 1:
        p.error("--runs must be at least 1")
    lines = []
    for method in METHODS if args.method == "all" else (args.method,):
        ratios = []
        for run in range(args.runs):
            try:
                ratios.append(bench_method(method, args, run))
            except UsageError as exc:  # an off-grid cell, missing data: one line, exit 2
                print(f"bench: {exc}", file=sys.stderr)
                return 2
            (Endpoint.chat, LedgerRunner._run, potentials.gather, Runner._rollout,  # type: ignore[method-assign]
             job_module.optimize) = originals
            credit.gather = maspo_method.gather = mapro_method.gather = originals[2]
            tavo_method.gather = tavo_credit.gather = originals[2]  # type: ignore[assignment]
        lines.append(summary(method, ratios))
    if args.runs > 1:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
