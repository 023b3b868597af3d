"""Time for timers: the event loop's clock in production, a manual one in tests.

Why an abstraction: the summary cadence (every 10 s), its generation timeout, the heartbeats and
the relay's think-after timer are all about time, and a test that waits real seconds is slow and
flaky (the rule "deterministic time"). Their users only ever ask a :class:`Clock` for ``now()`` and
``call_later(delay, fn)``; :class:`LoopClock` answers with the running asyncio loop,
:class:`ManualClock` with a number the test advances. Callbacks always run on the event loop
thread, so their users need no lock. (:mod:`acp_adapter.agent.heartbeat` adds a clock served by
one thread, for callers without a loop, and one that takes timers from any thread.)
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "LoopClock", "ManualClock", "Timer"]


class Timer(Protocol):
    """A scheduled callback that can be called off (``asyncio.TimerHandle`` is one)."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Monotonic seconds plus one-shot timers whose callbacks run on the event loop thread."""

    def now(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer: ...


class LoopClock:
    """The running event loop's clock (``loop.time()``, ``loop.call_later``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop if loop is not None else asyncio.get_running_loop()

    def now(self) -> float:
        return self._loop.time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self._loop.call_later(max(0.0, delay), callback)


class _ManualTimer:
    __slots__ = ("callback", "cancelled", "due")

    def __init__(self, due: float, callback: Callable[[], None]) -> None:
        self.due = due
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when told to: tests and the benchmark drive time deterministically.

    ``await clock.advance(10)`` moves time forward, firing every timer that falls due on the way
    at its own deadline (so a tick sees ``now()`` equal to its due time) and letting the event
    loop run the tasks those timers started (:meth:`settle`) before the next timer fires.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._heap: list[tuple[float, int, _ManualTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer(self._now + max(0.0, delay), callback)
        heapq.heappush(self._heap, (timer.due, next(self._seq), timer))
        return timer

    @property
    def pending(self) -> int:
        """Timers scheduled and not cancelled (fired ones are gone)."""
        return sum(1 for _, _, t in self._heap if not t.cancelled)

    async def settle(self, rounds: int = 20) -> None:
        """Let the loop run ready tasks (generations started by timers or observations)."""
        for _ in range(rounds):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing due timers in order and settling after each."""
        target = self._now + max(0.0, seconds)
        await self.settle()
        while self._heap and self._heap[0][0] <= target:
            due, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            self._now = max(self._now, due)
            timer.callback()
            await self.settle()
        self._now = target
        await self.settle()
