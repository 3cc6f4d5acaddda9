"""structlog to stderr; stdout is reserved for the one JSON result line."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(quiet: bool = False) -> None:
    level = logging.WARNING if quiet else logging.INFO
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                    structlog.dev.ConsoleRenderer(colors=False)],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
