"""The chat sink: the five platform affordances the delivery layer needs, and nothing more.

A platform adapter implements :class:`ChatSink` for one chat (route). Affordances a platform
lacks are no-ops (:class:`BaseSink` provides them), never errors. ``measure`` counts text in the
platform's own unit (Telegram: UTF-16 code units) and ``limit`` is the message size in that
unit, so continuation decisions are made in the unit the platform enforces.
"""

from __future__ import annotations

from typing import Any, Protocol

from acp_adapter.errors import AcpProgressError
from acp_adapter.frontends.bridges.events import ReactionKind

MessageId = Any
"""Whatever the platform uses to address a posted message (Telegram: an int)."""


class ChatSink(Protocol):
    """One chat's output. Every text given to it has passed the canonical redactor."""

    limit: int
    """Maximum message size, in :meth:`measure` units."""
    typing_ttl: float | None
    """Seconds a typing indicator lasts on the platform (re-sent before it lapses); None: no typing."""

    def measure(self, text: str) -> int: ...

    async def post(self, text: str, *, silent: bool = False, exactly_once: bool = False) -> MessageId:
        """Post a message. ``silent``: no notification on the person's phone (progress lines and
        the summary placeholder; the answer notifies). ``exactly_once``: a send whose outcome is
        unknown (a timeout: the platform may have shown it) raises :class:`SendOutcomeUnknown`
        instead of being retried, so the durable outbox decides (never a blind duplicate)."""
        ...

    async def edit(self, message_id: MessageId, text: str) -> None: ...

    async def delete(self, message_id: MessageId) -> None: ...

    async def typing(self, on: bool) -> None: ...

    async def react(self, target: MessageId, kind: ReactionKind) -> None: ...


class SendOutcomeUnknown(AcpProgressError):
    """A post may or may not have reached the chat (timed out after it was sent)."""


class BaseSink:
    """Defaults for adapters: code-point measure, no typing, no reactions, no deletes."""

    limit: int = 4096
    typing_ttl: float | None = None

    def measure(self, text: str) -> int:
        return len(text)

    async def delete(self, message_id: MessageId) -> None:
        return None

    async def typing(self, on: bool) -> None:
        return None

    async def react(self, target: MessageId, kind: ReactionKind) -> None:
        return None


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units: what Telegram's 4096 limit counts (an emoji outside the BMP is 2)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def split_to_fit(text: str, limit: int, measure: Any) -> list[str]:
    """Split a long text into messages that fit, preferring line breaks, then spaces."""
    chunks: list[str] = []
    rest = text
    while measure(rest) > limit:
        lo, hi = 1, len(rest)
        while lo < hi:  # the longest prefix that fits
            mid = (lo + hi + 1) // 2
            if measure(rest[:mid]) <= limit:
                lo = mid
            else:
                hi = mid - 1
        cut = lo
        for sep in ("\n", " "):
            at = rest.rfind(sep, 0, lo)
            if at > lo // 2:
                cut = at + 1
                break
        chunks.append(rest[:cut].rstrip())
        rest = rest[cut:]
    if rest.strip() or not chunks:
        chunks.append(rest)
    return chunks
