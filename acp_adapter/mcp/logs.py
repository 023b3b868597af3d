"""The ``mcp`` SDK's own log records, made safe: no server secret, no traceback flood.

Why: the SDK logs every stdout line of a server that is not JSON-RPC with ``logger.exception``
— a traceback whose pydantic message quotes the line. A hostile or broken server printing 10,000
such lines a second (each with its token in it) would flood the agent's stderr and put the token
there; the package's formatter redacts secret *shapes* but cannot know a server's own token. So a
filter on the root handlers takes every record of the ``mcp`` loggers, drops its traceback (its
one-line cause is kept, without the quoted input), replaces the known secret values of the live
servers, and lets at most ``BURST`` of them through per ``INTERVAL`` seconds (the rest are counted
and the count is said with the next record let through).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable

BURST = 10
INTERVAL = 10.0
MAX_MESSAGE = 500


class McpLogGuard(logging.Filter):
    """Scrubs and rate-limits the records of the ``mcp`` SDK's loggers (see the module doc)."""

    def __init__(
        self, burst: int = BURST, interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst = burst
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._secrets: Counter[str] = Counter()
        self._window = float("-inf")
        self._count = 0
        self.suppressed = 0

    def add_secrets(self, values: Iterable[str]) -> None:
        with self._lock:
            self._secrets.update(v for v in values if v)

    def remove_secrets(self, values: Iterable[str]) -> None:
        with self._lock:
            self._secrets.subtract(v for v in values if v)
            self._secrets = +self._secrets  # drop the ones no live server has

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name != "mcp" and not record.name.startswith("mcp."):
            return True
        with self._lock:
            now = self._clock()
            if now - self._window >= self.interval:
                self._window, self._count = now, 0
            self._count += 1
            if self._count > self.burst:
                self.suppressed += 1
                return False
            suppressed, self.suppressed = self.suppressed, 0
            secrets = sorted(self._secrets, key=len, reverse=True)
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            message += f" ({type(record.exc_info[1]).__name__})"  # its text quotes the server's line
        for secret in secrets:
            message = message.replace(secret, "[REDACTED]")
        if suppressed:
            message = f"({suppressed} more MCP SDK records suppressed) {message}"
        record.msg, record.args = message[:MAX_MESSAGE], ()
        record.exc_info = record.exc_text = record.stack_info = None
        return True


GUARD = McpLogGuard()


def install_guard() -> McpLogGuard:
    """Put :data:`GUARD` on every handler of the root logger (idempotent) and return it."""
    for handler in logging.getLogger().handlers:
        if GUARD not in handler.filters:
            handler.addFilter(GUARD)
    return GUARD
