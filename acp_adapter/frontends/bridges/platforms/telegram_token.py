"""The Telegram bot token kept out of every log: a filter that removes it (whole or in part) from
each record, the HTTP client's request log kept quiet, and the filter installed while a bridge runs.

Why a module of its own: the token is the bot's password and Bot API URLs contain it
(``/bot<token>/``); python-telegram-bot, httpx and httpcore log those URLs and quote them in
exceptions. Removing it is a job apart from talking to Telegram, and small enough to be read
whole by anyone checking that the token cannot leak.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import Final

_WORDISH: Final = re.compile(r"[A-Za-z0-9_-]{8,}")


class TokenScrubber(logging.Filter):
    """Removes the live bot token, whole or in part, from log records (message and exception text).

    Attached to the root logger's handlers while the bridge runs, so records of python-telegram-bot,
    httpx and httpcore (which log request URLs containing ``/bot<token>/``) are covered as they pass.
    """

    def __init__(self, token: str) -> None:
        super().__init__("acp_progress.token")
        self.token = token
        bot_id, _, secret = token.partition(":")
        parts = [token]
        if len(secret) >= 8:
            parts.append(secret)
        self._parts = re.compile("|".join(re.escape(x) for x in sorted(parts, key=len, reverse=True)))
        self._secret = secret
        self._id = re.compile(rf"(?<![0-9]){re.escape(bot_id)}:\S*") if bot_id.isdigit() else None

    def scrub(self, text: str) -> str:
        text = self._parts.sub("[REDACTED]", text)
        if self._id is not None:
            text = self._id.sub("[REDACTED]", text)
        if len(self._secret) >= 8:  # a piece of the secret (a truncated quote, a line split): 8+ chars
            text = _WORDISH.sub(lambda m: "[REDACTED]" if m.group(0) in self._secret else m.group(0), text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep the record, lose nothing else
            message = str(record.msg)
        record.msg = self.scrub(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
            # the scrubbed text is the traceback now: a formatter that formats exc_info afresh
            # (the package's does, never trusting a cached text) would bring the token back
            record.exc_info = None
        if record.stack_info:
            record.stack_info = self.scrub(record.stack_info)
        return True


def quiet_http_logs() -> None:
    """httpx logs each request URL at INFO, and Bot API URLs contain the token: keep it at WARNING."""
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))


@contextlib.contextmanager
def scrubbing(token: str) -> Iterator[TokenScrubber]:
    """The token scrubber on every root handler (and the last-resort handler) while the bridge runs."""
    scrubber = TokenScrubber(token)
    handlers = list(logging.getLogger().handlers)
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    for handler in handlers:
        handler.addFilter(scrubber)
    try:
        yield scrubber
    finally:
        for handler in handlers:
            handler.removeFilter(scrubber)
