"""`python -m engine serve-sim`: run the labelled simulated endpoint until SIGINT/SIGTERM.

Prints a banner to stderr and the base URL (http://HOST:PORT/v1) to stdout, then serves. Exit codes: 0 after a
signal, 2 for bad flags or unusable task data (one-line error on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Sequence

from core.errors import EngineError, UsageError
from engine.chat.auth import api_key_from_env, check_env_name
from engine.args import StrictParser, check_ascii_text, check_out_file, int_in, positive_float
from engine.sim import build
from engine.sim.faults import FAULT_KINDS, FaultPlan, parse_fault_spec
from engine.sim.policy import DEFAULT_REFLECTION_MODEL
from engine.sim.prefix_cache import DEFAULT_CAPACITY_TOKENS
from engine.sim.server import SimServer
from engine.log import get_logger

log = get_logger("engine.sim")

BANNER = "SIMULATED ENDPOINT — responses come from a scripted policy, scores are not model scores"
PROG = "python -m engine serve-sim"


def make_parser() -> argparse.ArgumentParser:
    parser = StrictParser(
        prog=PROG,
        description="Serve the labelled simulated OpenAI-compatible endpoint (scripted, seed-deterministic). "
                    "Its scores are not model scores.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int_in("--port", 0, 65535), default=8000,
                        help="port (default 8000; 0 = any free port)")
    parser.add_argument("--tasks", default="bfcl", help="comma-separated benchmark names (default bfcl)")
    parser.add_argument("--data-dir", default=None, help="directory holding the benchmark data files")
    parser.add_argument("--delay-ms", type=positive_float("--delay-ms", allow_zero=True), default=0.0,
                        help="fixed delay before every response")
    parser.add_argument("--fault", action="append", default=[], metavar="KIND=RATE",
                        help=f"inject a fault kind at a rate in [0,1] (repeatable); kinds: {', '.join(FAULT_KINDS)}")
    parser.add_argument("--fault-seed", type=int_in("--fault-seed", 0), default=0,
                        help="seed of the fault draws (default 0)")
    parser.add_argument("--retry-after", type=positive_float("--retry-after", allow_zero=True), default=0.0,
                        help="Retry-After seconds sent with http_429 (default 0)")
    parser.add_argument("--slow-seconds", type=positive_float("--slow-seconds", allow_zero=True), default=30.0,
                        help="how long a 'slow' fault holds the response (default 30)")
    parser.add_argument("--prefix-cache-tokens", type=int_in("--prefix-cache-tokens", 0),
                        default=DEFAULT_CAPACITY_TOKENS, metavar="N",
                        help=f"capacity in tokens of the simulated prefix cache, whose counters are served at GET "
                             f"/v1/prefix_cache (default {DEFAULT_CAPACITY_TOKENS}: off)")
    parser.add_argument("--pad-bytes", type=int_in("--pad-bytes", 0), default=0, metavar="N",
                        help="prefix every task answer with N bytes of filler unique to the request (long replies)")
    parser.add_argument("--log", default=None, metavar="FILE", help="append the request log to FILE as JSON lines")
    parser.add_argument("--reflection-model", default=DEFAULT_REFLECTION_MODEL,
                        help=f"model id answered as the reflection model (default {DEFAULT_REFLECTION_MODEL})")
    parser.add_argument("--require-api-key-env", default=None, metavar="NAME",
                        help="answer 401 to requests without `Authorization: Bearer $NAME` (the key is read from "
                             "the environment variable NAME, never from the command line)")
    return parser


def _usage_error(message: str) -> int:
    log.error(f"serve-sim: error: {message}")
    return 2


def main(argv: Sequence[str]) -> int:
    parser = make_parser()
    try:
        args = parser.parse_args(list(argv))
        for spec in args.fault:
            check_ascii_text(spec, "--fault")
        api_key = None
        if args.require_api_key_env is not None:
            name = check_env_name(args.require_api_key_env, "--require-api-key-env")
            api_key = api_key_from_env(name, required=True, what="--require-api-key-env")
        check_ascii_text(args.host, "--host")
        if args.log is not None:
            check_out_file(Path(args.log), "--log")
    except UsageError as exc:
        return _usage_error(str(exc).removeprefix(f"{PROG}: "))
    except SystemExit as exc:  # --help prints and exits 0
        return exc.code if isinstance(exc.code, int) else 0
    try:
        rates: dict[str, float] = {}
        for spec in args.fault:
            kind, rate = parse_fault_spec(spec)
            rates[kind] = rate
        plan = FaultPlan(rates=rates, seed=args.fault_seed, retry_after_s=args.retry_after,
                         slow_s=args.slow_seconds)
    except ValueError as exc:
        return _usage_error(str(exc))
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    try:
        policy = build.build_policy(tasks, args.data_dir, args.reflection_model)
    except (EngineError, ImportError) as exc:
        return _usage_error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    server = SimServer(policy, faults=plan, delay_s=args.delay_ms / 1000.0, host=args.host, port=args.port,
                       log_path=args.log, api_key=api_key.reveal() if api_key is not None else None,
                       prefix_cache_tokens=args.prefix_cache_tokens, pad_bytes=args.pad_bytes)
    try:
        asyncio.run(_serve(server))
    except OSError as exc:  # e.g. address in use
        return _usage_error(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    return 0


async def _serve(server: SimServer) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.start_async()
        try:
            log.warning(BANNER, kind="simulated_endpoint")  # once listening: a failure to listen is one line
            print(server.base_url, flush=True)
            log.info(f"serving {server.policy.row_count} rows; Ctrl-C to stop", base_url=server.base_url)
            await stop.wait()
        finally:
            await server.stop_async()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
