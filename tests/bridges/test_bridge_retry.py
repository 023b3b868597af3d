"""The bridges' one retry policy, on a manual clock: every wait is measured, none is slept.

``retry_after`` is honoured up to the cap (in order, a bounded number of times), a longer one
drops that delivery at once, the long poll waits at most the cap, stopping ends every wait, and
important calls back off on bad responses with a bounded, doubling delay.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

pytest.importorskip("telegram")

from telegram.error import NetworkError, RetryAfter

from acp_adapter.frontends.bridges.platforms.telegram import call_api
from acp_adapter.frontends.bridges.retry import (
    DROPPED_OVER_CAP,
    DROPPED_RATE_LIMITED,
    DROPPED_STOPPING,
    DeliveryDropped,
    RetryPolicy,
    retry_after_seconds,
)
from acp_adapter.summary.clock import ManualClock

pytestmark = pytest.mark.anyio


class Api:
    """A Bot API method that fails with the given errors first, then answers ``"ok"``; each call's time."""

    def __init__(self, clock: ManualClock, *errors: Exception) -> None:
        self.clock = clock
        self.errors = list(errors)
        self.calls: list[float] = []

    def __call__(self) -> Awaitable[str]:
        self.calls.append(self.clock.now())

        async def answer() -> str:
            if self.errors:
                raise self.errors.pop(0)
            return "ok"

        return answer()


def policy(clock: ManualClock, **kw: Any) -> RetryPolicy:
    return RetryPolicy(clock=clock, **kw)


async def run(clock: ManualClock, call: Callable[[], Awaitable[Any]]) -> asyncio.Task[Any]:
    """Start ``call`` and let it reach its first wait."""
    task = asyncio.ensure_future(call())
    await clock.settle()
    return task


def test_retry_after_is_read_from_seconds_or_a_timedelta() -> None:
    assert retry_after_seconds(3) == 3.0
    assert retry_after_seconds(datetime.timedelta(seconds=2.5)) == 2.5
    assert retry_after_seconds(-1) == 0.0


async def test_a_retry_after_under_the_cap_is_waited_exactly_on_the_clock() -> None:
    clock = ManualClock()
    api = Api(clock, RetryAfter(5), RetryAfter(5))
    task = await run(clock, lambda: call_api("sendMessage", api, policy(clock, retry_after_cap=60)))
    await clock.advance(4.99)
    assert api.calls == [0.0] and not task.done()  # still waiting: no early retry
    await clock.advance(0.01)
    assert api.calls == [0.0, 5.0]
    await clock.advance(5)
    assert task.done() and task.result() == "ok" and api.calls == [0.0, 5.0, 10.0]


async def test_a_retry_after_over_the_cap_drops_the_delivery_at_once() -> None:
    clock = ManualClock()
    api = Api(clock, RetryAfter(3600))
    with pytest.raises(DeliveryDropped) as dropped:
        await call_api("editMessageText", api, policy(clock, retry_after_cap=60))
    assert dropped.value.reason == DROPPED_OVER_CAP and "3600s, over the 60s cap" in str(dropped.value)
    assert api.calls == [0.0] and clock.now() == 0.0  # no wait at all


async def test_the_cap_defaults_to_60_seconds() -> None:
    clock = ManualClock()
    ok = await run(clock, lambda: call_api("sendMessage", Api(clock, RetryAfter(60)), policy(clock)))
    await clock.advance(60)
    assert ok.result() == "ok"
    with pytest.raises(DeliveryDropped, match="61s"):
        await call_api("sendMessage", Api(clock, RetryAfter(61)), policy(clock))


async def test_flood_waits_are_bounded_per_call() -> None:
    clock = ManualClock()
    api = Api(clock, *(RetryAfter(1) for _ in range(10)))
    task = await run(clock, lambda: call_api("sendMessage", api, policy(clock, rate_limit_attempts=3)))
    await clock.advance(10)
    with pytest.raises(DeliveryDropped) as dropped:
        task.result()
    assert dropped.value.reason == DROPPED_RATE_LIMITED and api.calls == [0.0, 1.0, 2.0, 3.0]


async def test_stopping_ends_a_flood_wait_at_once() -> None:
    clock = ManualClock()
    retry = policy(clock)
    api = Api(clock, RetryAfter(50))
    task = await run(clock, lambda: call_api("setMessageReaction", api, retry))
    assert not task.done()
    retry.stopping.set()
    await clock.settle()  # the clock never moved: only the stop ended the wait
    with pytest.raises(DeliveryDropped) as dropped:
        task.result()
    assert dropped.value.reason == DROPPED_STOPPING and api.calls == [0.0]


async def test_important_calls_back_off_doubling_up_to_the_bound_then_give_up() -> None:
    clock = ManualClock()
    retry = policy(clock, answer_retries=4, backoff=0.5, backoff_max=1.5)
    api = Api(clock, *(NetworkError("Bad Gateway") for _ in range(10)))
    task = await run(clock, lambda: call_api("sendMessage", api, retry, important=True))
    await clock.advance(30)
    with pytest.raises(NetworkError):
        task.result()
    assert api.calls == [0.0, 0.5, 1.5, 3.0, 4.5]  # waits 0.5, 1, 1.5 (capped), 1.5: four retries
    progress = Api(clock, NetworkError("Bad Gateway"))
    with pytest.raises(NetworkError):
        await call_api("editMessageText", progress, retry)  # a progress edit is not retried
    assert len(progress.calls) == 1


def test_the_long_poll_waits_at_most_the_cap() -> None:
    retry = RetryPolicy(retry_after_cap=60)
    assert retry.poll_wait(5) == 5
    assert retry.poll_wait(3600) == 60
