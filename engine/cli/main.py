"""`python -m engine COMMAND ...`: job, run, serve-sim, aggregate, card.

Engine errors and storage failures (engine/io_errors.py, also when wrapped in exception groups) become one line on
stderr and their exit code (2 for usage, configuration, data, artifact and storage errors); anything else
propagates loudly.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from core.errors import EngineError
from engine.chat.auth import scrub
from engine.io_errors import as_engine_error

COMMANDS: dict[str, tuple[str, str]] = {
    "job": ("engine.cli.job_cmd:job_main", "run one protocol job (optimize, sealed selection, paired test)"),
    "run": ("engine.cli.job_cmd:run_main", "baseline run of one bundle on a split, recorded"),
    "serve-sim": ("engine.sim.cli:main", "serve the labelled simulated OpenAI-compatible endpoint"),
    "aggregate": ("engine.aggregate.cli:main", "aggregate the three seeds of each cell"),
    "card": ("engine.cards.cli:main", "export, validate and re-score rollout cards"),
    "sandbox": ("engine.cli.sandbox_cmd:main", "check the jail for model-written code, or run a program in it"),
    "sweep": ("engine.sweep.cli:main", "the protocol grid as one resumable command (plan, run, status, serve)"),
}

USAGE = "usage: python -m engine {" + ",".join(COMMANDS) + "} ...\n\ncommands:\n" + "\n".join(
    f"  {name:<10} {desc}" for name, (_, desc) in COMMANDS.items())


def _resolve(target: str) -> Callable[[list[str]], int]:
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}\n{USAGE}", file=sys.stderr)
        return 2
    try:
        return _resolve(COMMANDS[name][0])(rest)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # engine errors, storage failures (also inside exception groups): one line
        error = as_engine_error(exc)
        if error is None:
            raise
        print(f"error: {one_line(str(error))}", file=sys.stderr)
        return error.exit_code


def one_line(text: str) -> str:
    """An error message as one printable line without any API key this process has read."""
    return " ".join(scrub(text).split()) or "unknown error"
