"""Logging to stderr with every line redacted (secrets never leave) and escaped (output is data).

A formatter on the handler, not discipline at each call site: an exception message or a
third-party library's debug line that happens to carry a token is redacted like everything else,
and a value from outside (an AG-UI ``runId``, a chat message) that carries a newline or an escape
sequence cannot forge a log line or repaint the terminal: the record's own text is escaped
(``\\n`` becomes ``\\\\n``, ESC becomes ``\\\\x1b``). A traceback keeps its lines — it is the one
multi-line part of a record — but its control characters are escaped and its continuation lines
are indented, so no line of it can pass for a record of its own.

uvicorn's loggers (``uvicorn.error``, ``uvicorn.access``) have no handlers of their own when it
runs with ``log_config=None`` (how ``acp-progress agui`` runs it), so their records reach the
root handler and this formatter too. asyncio's "socket.accept() out of system resource" record
(one per failed ``accept``, each with a traceback, when the process runs out of file descriptors)
is cut to one line and at most one per :data:`ACCEPT_ERROR_INTERVAL` seconds.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from typing import Any, Final

from acp_adapter.safety.redact import redact_text

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: Seconds between two logged accept() failures; the ones in between are counted, not logged.
ACCEPT_ERROR_INTERVAL: Final = 10.0

_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_BUT_NEWLINE: Final = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Continuation lines of a traceback start with this, so none of them reads as a record.
TRACEBACK_INDENT: Final = "    | "


def _escape_one(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_control(text: str) -> str:
    """``text`` with every control character (newline included) written as its escape."""
    return _CONTROL.sub(_escape_one, text)


def _escape_block(text: str) -> str:
    """A multi-line block (a traceback): its lines kept, everything else escaped, lines indented."""
    lines = _CONTROL_BUT_NEWLINE.sub(_escape_one, text).split("\n")
    return "\n".join(TRACEBACK_INDENT + line for line in lines)


class RedactingFormatter(logging.Formatter):
    """Formats as usual; each part is redacted, then escaped (so no escape hides a secret's shape)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escape_control(redact_text(super().formatMessage(record)))

    def formatException(self, ei: Any) -> str:
        return _escape_block(redact_text(super().formatException(ei)))

    def formatStack(self, stack_info: str) -> str:
        return _escape_block(redact_text(super().formatStack(stack_info)))

    def format(self, record: logging.LogRecord) -> str:
        # A traceback another handler formatted first is cached raw on the record: never reuse it.
        cached = record.exc_text
        record.exc_text = None if record.exc_info else cached and _escape_block(redact_text(cached))
        try:
            return super().format(record)
        finally:
            record.exc_text = cached


class AcceptErrorThrottle(logging.Filter):
    """asyncio's accept() failures (fd exhaustion): one line, no traceback, one per interval."""

    def __init__(self, interval: float = ACCEPT_ERROR_INTERVAL) -> None:
        super().__init__("asyncio")
        self.interval = interval
        self._lock = threading.Lock()
        self._last = float("-inf")
        self.suppressed = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("socket.accept() out of system resource"):
            return True
        now = time.monotonic()
        with self._lock:
            if now - self._last < self.interval:
                self.suppressed += 1
                return False
            self._last, suppressed, self.suppressed = now, self.suppressed, 0
        error = record.exc_info[1] if record.exc_info else None
        record.msg = "accept() failed: %s (connections are refused until it recovers; %d similar not logged)"
        record.args = (error or "out of system resources", suppressed)
        record.exc_info = record.exc_text = None
        return True


def configure_logging(level: str | int = "WARNING") -> None:
    """Send all logging to stderr (never stdout), redacted and escaped.

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
    asyncio_log = logging.getLogger("asyncio")
    if not any(isinstance(f, AcceptErrorThrottle) for f in asyncio_log.filters):
        asyncio_log.addFilter(AcceptErrorThrottle())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        # whatever configured them before (a host's dictConfig): through this handler, once
        uvicorn_log = logging.getLogger(name)
        uvicorn_log.handlers.clear()
        uvicorn_log.propagate = True
    logging.captureWarnings(True)
