"""structlog at the edges: the application's setup if it made one, else warnings on stderr."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import structlog

__all__ = ["get_logger"]


def get_logger() -> Any:
    """A bound logger named `apexmem`.

    When the application configured structlog we use its setup; otherwise events at or
    above `$APEXMEM_LOG_LEVEL` (default WARNING) go to stderr, never to stdout, so the
    CLI's `--json` output stays clean.
    """
    if structlog.is_configured():
        return structlog.get_logger("apexmem")
    level = logging.getLevelNamesMapping().get(
        os.environ.get("APEXMEM_LOG_LEVEL", "WARNING").upper(), logging.WARNING
    )
    return structlog.wrap_logger(
        structlog.PrintLogger(file=sys.stderr),
        wrapper_class=structlog.make_filtering_bound_logger(level),
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
    ).bind(logger="apexmem")
