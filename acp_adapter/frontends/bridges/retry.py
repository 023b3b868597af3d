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
sleeps any more, so Ctrl-C is never held up by a platform's ``retry_after``. Waits run on the
policy's :class:`~acp_adapter.summary.Clock` (the loop's by default), so tests measure them on a
``ManualClock`` instead of sleeping.

This is the only place a ``retry_after`` is interpreted: :func:`retry_after_seconds` reads the
platform's value (seconds or a ``timedelta``), :meth:`RetryPolicy.flood_wait` decides a delivery's
wait (or drops it) and :meth:`RetryPolicy.poll_wait` the long poll's (which has nothing to drop:
it waits at most the cap and asks again).

Why not python-telegram-bot's ``AIORateLimiter`` (the ``rate-limiter`` extra, on ``aiolimiter``) for
flood control: it is a second pacing layer under this one and does not fit it.

* Its own 429 handling (``max_retries`` > 0) sleeps ``retry_after`` with a plain ``asyncio.sleep``:
  uncapped and deaf to :attr:`RetryPolicy.stopping`, so a ``retry_after`` of an hour would hold the
  chat (and Ctrl-C) again — exactly what the cap here removed. And it halts *every* request of the
  bot during that wait, not just the chat's. With ``max_retries=0`` it re-raises, leaving only:
* its throttle (30 requests/s per bot, 20/min per group ``chat_id``) holds a call before it is sent,
  also uninterruptibly; in a group every progress edit, typing refresh and reaction would wait up to
  3 s in its queue, so a stop could no longer finish within ``stop_grace``, and the delay happens
  *inside* a delivery the route worker already committed to, where it cannot coalesce the edits
  that arrive meanwhile. The bridge paces on its own terms instead: one worker per chat, edits
  coalesced over a window and superseded rather than queued, typing refreshed at most every few
  seconds — well under those limits for a conversation — and a real 429 is honoured here.
* it times with ``aiolimiter``'s loop clock only: no injected clock, so its pacing could be tested
  only by sleeping.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from dataclasses import dataclass, field
from typing import Final

from acp_adapter.clock import Clock, LoopClock
from acp_adapter.errors import AcpProgressError

log = logging.getLogger("acp_progress.bridges.retry")

BACKOFF_MAX: Final = 8.0
"""Seconds: the longest backoff between two retries of a bad response."""

DROPPED_OVER_CAP: Final = "retry_after_over_cap"
DROPPED_RATE_LIMITED: Final = "rate_limited"
DROPPED_STOPPING: Final = "bridge_stopping"


def retry_after_seconds(value: float | datetime.timedelta) -> float:
    """A platform's ``retry_after`` in seconds, whether it came as a number or a ``timedelta``."""
    seconds = value.total_seconds() if isinstance(value, datetime.timedelta) else float(value)
    return max(0.0, seconds)


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
    #: where waits are timed (None: the running loop's clock)
    clock: Clock | None = None

    def backoff_delay(self, retry: int) -> float:
        """Seconds before retry number ``retry`` (1-based) of a bad response."""
        return float(min(self.backoff_max, self.backoff * 2 ** (retry - 1)))

    async def sleep(self, seconds: float) -> bool:
        """Wait ``seconds``; False (at once) when the bridge is stopping or starts stopping meanwhile."""
        if self.stopping.is_set():
            return False
        clock = self.clock or LoopClock()
        elapsed = asyncio.get_running_loop().create_future()

        def done() -> None:
            if not elapsed.done():
                elapsed.set_result(None)

        timer = clock.call_later(max(0.0, seconds), done)
        stopping = asyncio.ensure_future(self.stopping.wait())
        try:
            await asyncio.wait({elapsed, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            stopping.cancel()
            elapsed.cancel()
        return not self.stopping.is_set()

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

    def poll_wait(self, seconds: float) -> float:
        """The long poll's wait for a ``retry_after``: honoured up to the cap. Nothing is dropped (a
        poll carries no delivery); a longer wait is cut to the cap and the poll asks again."""
        if seconds > self.retry_after_cap:
            log.warning(
                "getUpdates: the platform asked to wait %gs, over the %gs cap; polling again after the cap",
                seconds,
                self.retry_after_cap,
            )
            return self.retry_after_cap
        return seconds
