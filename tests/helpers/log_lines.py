"""What a named logger of this process says, kept in a list: for tests that wait for a line an
endpoint served in this process logs (as they would read a process's stderr)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator


class LogLines(logging.Handler):
    """Every message (``record.getMessage()``) the logger it is attached to emits at INFO or above."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def text(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, needle: str, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while needle not in self.text():
            assert time.monotonic() < deadline, f"no {needle!r} in {within} s:\n{self.text()}"
            time.sleep(0.02)


@contextlib.contextmanager
def log_lines(name: str) -> Iterator[LogLines]:
    """Collect what logger ``name`` says at INFO or above until the block ends (its level and
    handlers are put back after)."""
    logger = logging.getLogger(name)
    lines = LogLines()
    level = logger.level
    if not logger.isEnabledFor(logging.INFO):
        logger.setLevel(logging.INFO)
    logger.addHandler(lines)
    try:
        yield lines
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)
