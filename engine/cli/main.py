"""`python -m engine COMMAND ...`: job, run, serve-sim, aggregate, card, sandbox.

`--log-format console|json` is a global option (anywhere on the command line, before `--`): every stderr line of
every command is then a structlog event in that format (engine/log.py); stdout keeps the plain results.

Engine errors and storage failures (engine/io_errors.py, also when wrapped in exception groups) become one line on
stderr and their exit code (2 for usage, configuration, data, artifact and storage errors); anything else
propagates loudly.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from core.errors import EngineError
from engine import log as logs
from engine.chat.auth import scrub
from engine.io_errors import as_engine_error

log = logs.get_logger("engine.cli")

COMMANDS: dict[str, tuple[str, str]] = {
    "job": ("engine.cli.job_cmd:job_main", "run one protocol job (optimize, sealed selection, paired test)"),
    "run": ("engine.cli.job_cmd:run_main", "baseline run of one bundle on a split, recorded"),
    "serve-sim": ("engine.sim.cli:main", "serve the labelled simulated OpenAI-compatible endpoint"),
    "aggregate": ("engine.aggregate.cli:main", "aggregate the three seeds of each cell"),
    "card": ("engine.cards.cli:main", "export, validate and re-score rollout cards"),
    "sandbox": ("engine.cli.sandbox_cmd:main", "check the jail for model-written code, or run a program in it"),
    "gateway": ("engine.cli.gateway_cmd:main", "record any OpenAI-client program's model calls into a card stream"),
    "sweep": ("engine.sweep.cli:main", "the protocol grid as one resumable command (plan, run, status, serve)"),
}

USAGE = "usage: python -m engine {" + ",".join(COMMANDS) + "} ...\n\ncommands:\n" + "\n".join(
    f"  {name:<10} {desc}" for name, (_, desc) in COMMANDS.items()) + (
    "\n\nglobal options (every command):\n  --log-format {console,json}  stderr lines as human text (default) or "
    "one JSON object per line")


def _resolve(target: str) -> Callable[[list[str]], int]:
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def main(argv: list[str]) -> int:
    log_format, argv = logs.split_log_format(argv)
    if log_format is not None and log_format not in logs.LOG_FORMATS:
        logs.configure()
        log.error(f"error: {logs.OPTION} must be one of {', '.join(logs.LOG_FORMATS)}, got {log_format!r}")
        return 2
    logs.configure(logs.LOG_FORMATS[1] if log_format == "json" else "console")
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        _unknown_command(name)
        return 2
    try:
        return _resolve(COMMANDS[name][0])(rest)
    except KeyboardInterrupt:
        log.error("error: interrupted")
        return 130
    except Exception as exc:  # engine errors, storage failures (also inside exception groups): one line
        error = as_engine_error(exc)
        if error is None:
            raise
        log.error(f"error: {one_line(str(error))}", exit_code=error.exit_code, error_type=type(error).__name__)
        return error.exit_code


def _unknown_command(name: str) -> None:
    """One event; the human form keeps the usage text under the error line."""
    if logs.current_format() == "json":
        log.error(f"error: unknown command {name!r}", commands=list(COMMANDS))
    else:
        log.error(f"error: unknown command {name!r}\n{USAGE}")


def one_line(text: str) -> str:
    """An error message as one printable line without any API key this process has read."""
    return " ".join(scrub(text).split()) or "unknown error"
