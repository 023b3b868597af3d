"""The chat sink as delivery calls it: every text redacted at the edge, every call counted, and a
failing call logged (redacted) and swallowed, so a platform error never breaks a turn."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from acp_adapter.frontends.bridges.retry import DeliveryDropped
from acp_adapter.frontends.bridges.sink import ChatSink, MessageId
from acp_adapter.safety.redact import redact_text
from acp_adapter.text import ellipsize

log = logging.getLogger("acp_progress.bridges.delivery")


@dataclass
class DeliveryStats:
    """What the platform was asked to do (the benchmark and ``bridge show`` read these)."""

    posts: int = 0
    edits: int = 0
    deletes: int = 0
    typing: int = 0
    reactions: int = 0
    failures: int = 0
    edit_times: list[float] = field(default_factory=list)
    dropped_by_reason: dict[str, int] = field(default_factory=dict)
    """Deliveries the platform layer gave up on by policy (e.g. ``retry_after_over_cap``)."""

    def drop(self, reason: str) -> None:
        self.dropped_by_reason[reason] = self.dropped_by_reason.get(reason, 0) + 1


class SinkCalls:
    """One route's sink with its :class:`DeliveryStats`: the parts of delivery share both."""

    def __init__(self, sink: ChatSink, stats: DeliveryStats) -> None:
        self.sink = sink
        self.stats = stats

    def fit(self, text: str) -> str:
        """``text`` cut to the platform's message limit, measured in the platform's unit."""
        return ellipsize(text, self.sink.limit, measure=self.sink.measure)

    def too_long(self, text: str) -> bool:
        return self.sink.measure(text) > self.sink.limit

    async def post(self, text: str, *, silent: bool = False) -> MessageId:
        """Post ``text`` (redacted); None when the platform refused or dropped it."""
        self.stats.posts += 1
        try:
            return await self.sink.post(redact_text(text), silent=silent)
        except DeliveryDropped as exc:
            self.stats.drop(exc.reason)
            log.info("post dropped: %s", exc)
            return None
        except Exception as exc:
            self.stats.failures += 1
            log.warning("post failed: %s", redact_text(str(exc)))
            return None

    async def call(self, what: str, op: Awaitable[Any]) -> bool:
        """Await one platform call (an edit, a delete, typing …); False when it failed or was dropped."""
        try:
            await op
        except DeliveryDropped as exc:
            self.stats.drop(exc.reason)
            log.info("%s dropped: %s", what, exc)
            return False
        except Exception as exc:
            log.warning("%s failed: %s", what, redact_text(str(exc)))
            return False
        return True
