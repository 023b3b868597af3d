"""The one size limit on what an MCP server may send in one message, for every transport.

Why one limit: a server's answer is held in memory until it is complete, whatever carries it — a
stdio line, an HTTP response body, a server-sent event. Without a bound, one answer of a few
hundred megabytes takes the agent to gigabytes. So every transport counts the bytes of a message
*while it arrives* and cuts it off past :func:`max_message` bytes; the call that waited for it
fails with :class:`AnswerTooLarge`, and the agent goes on serving.
"""

from __future__ import annotations

import logging

from acp_adapter.errors import AcpProgressError

log = logging.getLogger("acp_progress.mcp")

#: The largest message (one JSON-RPC message) read from a server by default: the setting
#: ``mcp.max_message_bytes`` (``ACP_PROGRESS_MCP_MAX_LINE``, 64 KiB to 1 GiB). The variable says
#: "line" because a stdio message is one line; the same bound applies to HTTP bodies and SSE events.
MAX_MESSAGE = 64 << 20
MAX_MESSAGE_ENV = "ACP_PROGRESS_MCP_MAX_LINE"


def size_text(limit: int) -> str:
    """``64 MiB`` for whole mebibytes, else the byte count."""
    return f"{limit >> 20} MiB" if limit % (1 << 20) == 0 else f"{limit:,} bytes"


def too_large_text(limit: int) -> str:
    """What a person is told about an answer that was cut off."""
    return (
        f"the server's answer is larger than the {size_text(limit)} limit ({MAX_MESSAGE_ENV}); it was cut off"
    )


class AnswerTooLarge(AcpProgressError, RuntimeError):
    """A call's answer passed the size limit and was cut off while it arrived."""


class SizeGuard:
    """One server's limit and how many of its messages were cut off (the transports count here;
    a call that fails looks whether a cut-off happened meanwhile and says so plainly)."""

    def __init__(self, limit: int = MAX_MESSAGE) -> None:
        self.limit = limit
        self.tripped = 0

    def trip(self) -> None:
        self.tripped += 1
        log.warning("an MCP server sent a message larger than %s; it was cut off", size_text(self.limit))
