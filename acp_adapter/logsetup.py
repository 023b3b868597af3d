"""Logging to stderr with every line passed through the canonical redactor (DESIGN contract 5).

A filter on the handler, not discipline at each call site: an exception message or a third-party
library's debug line that happens to carry a token is redacted like everything else.
"""

from __future__ import annotations

import logging
import sys

from .redact import redact_text

__all__ = ["RedactingFormatter", "configure_logging"]

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    """Formats as usual (tracebacks included), then redacts the whole line."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


def configure_logging(level: str | int = "WARNING") -> None:
    """Send all logging to stderr (never stdout), redacted.

    ``level`` is a level name or number; the command line passes ``Settings.log_level``, already
    validated from ``ACP_PROGRESS_LOG_LEVEL`` (an unknown name is a start-up error there, not a
    silent WARNING here)."""
    if isinstance(level, str):
        level = logging.getLevelNamesMapping()[level.strip().upper()]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter(FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)
