"""Text and failures from MCP servers made safe to show, for every module of the MCP client side.

Why a module of its own: the connection, the tool bridge, tasks and questions all show what a
server sent (results, status messages, questions, reasons for a failure); one home for the
cleaning keeps them alike and their imports one way.
"""

from __future__ import annotations

import re

from acp_adapter.errors import AcpProgressError
from acp_adapter.safety.redact import redact_text

#: The longest reason shown for a server that failed.
MAX_REASON = 300

_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves, clear screen)
    r"|\x1b\][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)?"  # OSC (window title, hyperlinks)
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def clean_text(text: str) -> str:
    """``text`` without escape sequences and control characters (newlines and tabs stay)."""
    return _CONTROL.sub("", text)


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every known secret value of the server replaced."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "[REDACTED]")
    return text


class ServerCrashed(AcpProgressError, RuntimeError):
    """The server's connection closed during a call (the process died or hung up)."""


def reason_of(exc: BaseException) -> str:
    """A short, redacted, one-line reason for a failure (no secrets, no control characters)."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return reason_of(exc.exceptions[0])
    text = str(exc) or type(exc).__name__
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = " ".join(text.split())
    if len(text) > MAX_REASON:
        text = text[: MAX_REASON - 1] + "…"
    return redact_text(text)
