"""The one retry policy of chat deliveries: how long a platform may make a chat wait, and what is retried.

Two kinds of trouble, two rules:

* **flood control** (Telegram's 429 ``retry_after``): the platform says how long to wait. Waits up
  to :attr:`RetryPolicy.retry_after_cap` are honoured (at most ``rate_limit_attempts`` times for one
  call, order kept); a longer one drops *that* delivery at once (:class:`DeliveryDropped`, counted
  by reason in ``delivery_dropped_by_reason``) so one hostile or confused reply cannot block the
  chat for an hour;
* **a bad response** (5xx, an HTML error page, malformed JSON, a timeout): deliveries that carry
  an outcome — the answer, an error, a permission question and its verdict — are retried
  ``answer_retries`` times with exponential backoff (``backoff``, doubling, at most
  ``backoff_max``); progress edits, typing and reactions are not (the next edit supersedes them).

Every wait is interruptible: once the bridge is stopping (:attr:`RetryPolicy.stopping` set) no call
sleeps any more, so Ctrl-C is never held up by a platform's ``retry_after``.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Final

from acp_adapter.errors import AcpProgressError

__all__ = [
    "BACKOFF_MAX",
    "DROPPED_OVER_CAP",
    "DROPPED_RATE_LIMITED",
    "DROPPED_STOPPING",
    "DeliveryDropped",
    "RetryPolicy",
]

BACKOFF_MAX: Final = 8.0
"""Seconds: the longest backoff between two retries of a bad response."""

DROPPED_OVER_CAP: Final = "retry_after_over_cap"
DROPPED_RATE_LIMITED: Final = "rate_limited"
DROPPED_STOPPING: Final = "bridge_stopping"


class DeliveryDropped(AcpProgressError):
    """The policy gave up on one delivery on purpose; ``reason`` is its ``delivery_dropped_by_reason`` key."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass
class RetryPolicy:
    """Limits of one bridge's platform calls (defaults: :class:`~acp_adapter.config.TelegramSettings`)."""

    retry_after_cap: float = 60.0
    rate_limit_attempts: int = 3
    answer_retries: int = 4
    backoff: float = 0.5
    backoff_max: float = BACKOFF_MAX
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    def backoff_delay(self, retry: int) -> float:
        """Seconds before retry number ``retry`` (1-based) of a bad response."""
        return float(min(self.backoff_max, self.backoff * 2 ** (retry - 1)))

    async def sleep(self, seconds: float) -> bool:
        """Wait ``seconds``; False (at once) when the bridge is stopping or starts stopping meanwhile."""
        if self.stopping.is_set():
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)
            return False
        return True

    def flood_wait(self, what: str, seconds: float, attempt: int) -> float:
        """The wait for a ``retry_after`` on attempt ``attempt``, or :class:`DeliveryDropped`."""
        if self.stopping.is_set():
            raise DeliveryDropped(DROPPED_STOPPING, f"{what}: rate limited while the bridge stops")
        if seconds > self.retry_after_cap:
            raise DeliveryDropped(
                DROPPED_OVER_CAP,
                f"{what}: the platform asked to wait {seconds:g}s, over the {self.retry_after_cap:g}s cap",
            )
        if attempt > self.rate_limit_attempts:
            raise DeliveryDropped(
                DROPPED_RATE_LIMITED, f"{what}: still rate limited after {self.rate_limit_attempts} waits"
            )
        return seconds
