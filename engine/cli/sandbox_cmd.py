"""`python -m engine sandbox {check,run}`: see the jail model-written code gets on this machine, and try it.

    python -m engine sandbox check
        which isolation is available and why, for model-written code and for SWE's repository tools (exit 0:
        both jails work; 1: one does not, with the reason and fix)
    python -m engine sandbox run PROGRAM.py [--stdin FILE] [--limits lcb|apps|toolhop] [--unsafe-sandbox]
        runs PROGRAM.py exactly as the benchmarks do and prints the outcome as one JSON line
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from core.errors import UsageError
from engine.args import StrictParser
from engine.log import get_logger

log = get_logger("engine.cli")

HEAD_CHARS = 2_000


def _limits(name: str | None) -> Any:
    from benchmarks.sandbox import SandboxLimits

    if name == "lcb":
        from benchmarks.lcb.scorer import default_limits as lcb_limits

        return lcb_limits()
    if name == "apps":
        from benchmarks.apps.scorer import default_limits as apps_limits

        return apps_limits()
    if name == "toolhop":
        from benchmarks.toolhop.executor import toolhop_limits

        return toolhop_limits()
    return SandboxLimits()


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror if isinstance(exc, OSError) else exc}") from exc


def check_main() -> int:
    from benchmarks.sandbox import check

    iso = check()
    print(f"jail: {'available' if iso.available else 'NOT available'} (bubblewrap)")
    print(f"why: {iso.reason}")
    if iso.available:
        for key, value in iso.as_dict().items():
            print(f"{key}: {value}")
        from benchmarks.swe.jail_check import check_swe_tools

        swe_ok, swe_how = check_swe_tools()
        print(f"swe repository tools: {'jailed' if swe_ok else 'NOT jailed'} ({swe_how})")
        return 0 if swe_ok else 1
    print("code benchmarks (lcb, apps, toolhop, python_exec) and SWE's repository tools (--swe-repos) refuse to run "
          "here unless --unsafe-sandbox is given")
    return 1


def run_main(args: argparse.Namespace) -> int:
    from benchmarks.sandbox import allow_unsafe_sandbox, run_python_sync
    from benchmarks.sandbox.redact import redact

    code = _read(args.program, "program")
    stdin = _read(args.stdin, "--stdin file") if args.stdin else ""
    if args.unsafe_sandbox:
        allow_unsafe_sandbox()
    result = run_python_sync(code, stdin, _limits(args.limits))
    if result.isolation.get("kind") != "bwrap":
        log.warning("warning: --unsafe-sandbox: the program ran WITHOUT a jail")
    print(json.dumps({
        "exit_code": result.exit_code, "signal": result.signal_name, "timed_out": result.timed_out,
        "timeout_kind": result.timeout_kind, "memory_limit_hit": result.memory_exceeded,
        "output_limit_hit": result.output_limit_exceeded, "stdout_head": redact(result.stdout, HEAD_CHARS),
        "stderr_head": redact(result.stderr, HEAD_CHARS), "uid": result.program_uid,
        "isolation": result.isolation, "limits": args.limits or "default",
        "wall_seconds": round(result.wall_seconds, 3),
    }, sort_keys=True))
    return 0


def main(argv: list[str]) -> int:
    p = StrictParser(prog="python -m engine sandbox", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True, parser_class=StrictParser)
    sub.add_parser("check", help="which isolation is available on this machine, and why")
    run = sub.add_parser("run", help="run a program exactly as the benchmarks do; one JSON line")
    run.add_argument("program", metavar="PROGRAM.py")
    run.add_argument("--stdin", metavar="FILE", help="file given to the program as standard input")
    run.add_argument("--limits", choices=["lcb", "apps", "toolhop"], help="limits of that benchmark (default: "
                     "the sandbox defaults)")
    run.add_argument("--unsafe-sandbox", action="store_true", help="run without a jail if none can be built")
    args = p.parse_args(argv)
    if args.action == "check":
        return check_main()
    return run_main(args)
