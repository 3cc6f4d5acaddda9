"""The one logging configuration: every stderr line of the engine is a structlog event.

- `console` (the default): a human line, the event text exactly as written at the call site (the fields an
  event carries besides its text are for machines and stay out of the human line).
- `json` (`--log-format json`, a global option of every command): one JSON object per line with `event`, `level`,
  `logger_name`, `timestamp` and the event's fields; nothing else reaches stderr (the warnings of libraries
  that use stdlib logging, and Python warnings, are rendered the same way).

stdout is never a log stream: results (the one JSON line of `job`, tables, paths) are plain prints there.
Events go to whatever `sys.stderr` is at the moment of writing (so redirected or captured stderr gets them), one
`write` per line under a lock, so lines from the simulated endpoint's thread never interleave with the job's. A
stderr that is gone (a closed pipe) drops the line: a log line never raises into the job it describes.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import MutableMapping, Sequence
from typing import Any, Literal

import structlog

LogFormat = Literal["console", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("console", "json")
OPTION = "--log-format"
_lock = threading.Lock()
_state: dict[str, LogFormat] = {"format": "console"}


class StderrLogger:
    """A structlog logger writing each rendered event as one line to the current `sys.stderr`."""

    def msg(self, message: str) -> None:
        with _lock:
            try:
                sys.stderr.write(message + "\n")
                sys.stderr.flush()
            except (OSError, ValueError):  # stderr is gone (`2>&1 | head`, a closed pipe): a log line never fails
                pass  # the work it describes; the card records everything the line would have said

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


def _stderr_logger(*_args: Any) -> StderrLogger:
    return StderrLogger()


def render_human(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> str:
    """The human line: the event text only (for example `progress: charged=10/600 ...`)."""
    return str(event_dict.get("event", ""))


def configure(log_format: LogFormat = "console", *, quiet: bool = False, route_stdlib: bool = True) -> None:
    """Configure structlog for this process; `quiet` keeps warnings and errors only; `route_stdlib` renders the
    warnings of stdlib-logging libraries (aiohttp, asyncio) the same way (the commands; not on a mere import)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}")
    renderer: Any = (structlog.processors.JSONRenderer(sort_keys=True) if log_format == "json" else render_human)
    processors: list[Any] = [structlog.contextvars.merge_contextvars, structlog.processors.add_log_level]
    if log_format == "json":
        processors.append(structlog.processors.TimeStamper(fmt="iso", utc=True))
    if route_stdlib:
        _route_stdlib_logging(renderer, quiet)
    structlog.configure(
        processors=[*processors, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING if quiet else logging.INFO),
        logger_factory=_stderr_logger, cache_logger_on_first_use=False)
    _state["format"] = log_format


# Agent frameworks log every failure they see (AutoGen: one `Error processing publish message` per failed agent
# message, hundreds under faults; CrewAI an `OpenAI API call failed` through the ROOT logger). The engine records
# each such failure as the attempt's error, so their lines say nothing new. They reach stderr through the engine's
# handler: with --log-format json every one (a machine filters by `logger_name`), on the console the first
# FRAMEWORK_LINES of each framework and then one line saying the rest are not shown; --quiet drops them all.
FRAMEWORK_LOGGERS = ("autogen_core", "autogen_agentchat", "autogen_ext", "crewai", "langgraph", "langchain",
                     "langchain_core", "openai.agents", "LiteLLM")
# a record of a logger outside those (the root logger) is the framework's when its source file is in one of these
FRAMEWORK_PACKAGES = ("autogen_core", "autogen_agentchat", "autogen_ext", "crewai", "langgraph", "langchain",
                      "langchain_core", "agents", "litellm")
FRAMEWORK_LINES = 3


def _package(pathname: str) -> str | None:
    """The installed top-level package a source file belongs to (None: not under site-packages)."""
    path = pathname.replace("\\", "/")
    return path.split("site-packages/", 1)[1].split("/", 1)[0] if "site-packages/" in path else None


def is_framework_record(name: str, pathname: str = "") -> bool:
    if any(name == root or name.startswith(root + ".") for root in FRAMEWORK_LOGGERS):
        return True
    return _package(pathname) in FRAMEWORK_PACKAGES


def framework_of(record: logging.LogRecord) -> str:
    return _package(record.pathname) or record.name.split(".", 1)[0]


class _EngineHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """stdlib logging (aiohttp, asyncio) rendered like the engine's own events, to the current stderr; the
    frameworks' records: all of them in JSON, the first FRAMEWORK_LINES per framework on the console, none under
    --quiet."""

    quiet = False
    limit: int | None = None

    def __init__(self) -> None:
        super().__init__()
        self.shown: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if is_framework_record(record.name, record.pathname):
            if self.quiet:
                return
            if self.limit is not None:
                framework = framework_of(record)
                seen = self.shown[framework] = self.shown.get(framework, 0) + 1
                if seen > self.limit + 1:
                    return
                if seen == self.limit + 1:
                    record = logging.makeLogRecord({
                        "name": record.name, "levelno": logging.WARNING, "levelname": "WARNING",
                        "msg": f"{framework}: further log records of this framework are not shown (the engine "
                               "records each failure as its attempt's error in the card; --log-format json shows "
                               "them all, --quiet none)"})
        self.stream = sys.stderr
        with _lock:
            super().emit(record)


def _route_stdlib_logging(renderer: Any, quiet: bool = False) -> None:
    """Warnings of libraries that use stdlib logging become lines of the same format (never a stray text line)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _EngineHandler)]:
        root.removeHandler(handler)
    handler = _EngineHandler()
    handler.quiet = quiet
    handler.limit = None if renderer is not render_human else FRAMEWORK_LINES
    handler.setLevel(logging.WARNING)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        foreign_pre_chain=[structlog.stdlib.add_log_level, _add_record_name,
                           structlog.processors.TimeStamper(fmt="iso", utc=True)]))
    root.addHandler(handler)
    logging.captureWarnings(False)  # re-install even if someone restored warnings.showwarning since
    logging.captureWarnings(True)  # Python warnings too (logger py.warnings)


def _add_record_name(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    record = event_dict.get("_record")
    if record is not None:
        event_dict.setdefault("logger_name", record.name)
    return event_dict


def current_format() -> LogFormat:
    return _state["format"]


def get_logger(name: str) -> Any:
    """A lazy logger whose events carry `logger_name` (in JSON)."""
    return structlog.get_logger(**{"logger_name": name})  # lazy: rendered with the config of the moment


def split_log_format(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """Take the global `--log-format VALUE` / `--log-format=VALUE` out of argv (anywhere before `--`).

    Returns (value or None, the remaining arguments); the value is checked by the caller."""
    value: str | None = None
    rest: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        if item == "--":
            rest += items[i:]
            break
        if item == OPTION:
            value = items[i + 1] if i + 1 < len(items) else ""
            i += 2
            continue
        if item.startswith(OPTION + "="):
            value = item[len(OPTION) + 1:]
        else:
            rest.append(item)
        i += 1
    return value, rest


if not structlog.is_configured():  # engine used as a library (tests, embedding): human lines on stderr
    configure(route_stdlib=False)
