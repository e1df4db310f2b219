"""structlog configuration: JSON lines in production, console rendering on a terminal."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

from bot.settings import Settings


def configure_logging(settings: Settings, *, stream: TextIO | None = None) -> None:
    """Configure structlog and stdlib logging once, at the process edge."""
    out = stream or sys.stderr
    level = logging.getLevelName(settings.log_level.upper())
    if not isinstance(level, int):
        level = logging.INFO
    use_json = settings.log_format == "json" or (settings.log_format == "auto" and not out.isatty())
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # One write per line (print() writes the newline separately): worker processes sharing a
        # pipe then never interleave two JSON lines into one.
        logger_factory=structlog.WriteLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
