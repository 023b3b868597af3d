"""Repeating heartbeats on a clock: the event loop's under ACP, one shared thread without a loop.

Starting a ``threading.Timer`` per model call would, with thousands of open sessions, take a
thread per waiting call. Here :class:`Heartbeats` turns any
:class:`~acp_adapter.clock.Clock` (``now()`` plus one-shot ``call_later``) into repeating
jobs with exact cancel semantics, so the timing source is a choice, not a thread:

* :func:`loop_heartbeats` — the ACP agent's event loop (``loop.call_later``, armed from the turn's
  worker thread with ``call_soon_threadsafe``). The callbacks hand an update to the session's
  state machine, which lives on that loop's connection anyway, so no extra thread is needed.
* :class:`HeartbeatScheduler` — a single daemon thread keeping a heap of deadlines
  (:class:`ThreadClock`), for loop-less callers: the plain terminal (``acp-progress run``,
  ``python run_agent.py``) and embedders that call :class:`run_agent.AIAgent` without a loop.
* :class:`~acp_adapter.clock.ManualClock` — tests, which move time by hand.

Callbacks must be quick and non-blocking (they hand an update on, or redraw one line).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

from acp_adapter.clock import Clock, Timer

log = logging.getLogger("acp_progress.heartbeat")


class HeartbeatHandle:
    """A repeating job. ``cancel()`` returns only once the job can never run again.

    The per-handle lock is held while the callback runs, so a cancel from another thread waits
    for a callback in flight instead of racing it; a cancel from inside the callback is allowed
    (the lock is re-entrant).
    """

    __slots__ = ("_cancelled", "_lock", "_on_cancel", "_timer", "callback", "interval")

    def __init__(self, interval: float, callback: Callable[[], None]) -> None:
        self.interval = interval
        self.callback = callback
        self._lock = threading.RLock()
        self._cancelled = False
        self._timer: Timer | None = None
        self._on_cancel: Callable[[HeartbeatHandle], None] | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()  # the flag already stops it; this only frees the clock's slot early
        if self._on_cancel is not None:
            self._on_cancel(self)

    def _fire(self) -> bool:
        """Run the callback unless cancelled; return whether to reschedule."""
        with self._lock:
            if self._cancelled:
                return False
            try:
                self.callback()
            except Exception:
                log.exception("heartbeat callback failed")
            return not self._cancelled


class Heartbeats:
    """Repeating jobs on a :class:`~acp_adapter.clock.Clock`.

    Each beat is scheduled from the previous deadline, not from when the callback ran, so beats
    do not drift; a beat that is late by more than an interval is not run twice to catch up.
    """

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._live: set[HeartbeatHandle] = set()
        self._live_lock = threading.Lock()

    def every(self, interval: float, callback: Callable[[], None]) -> HeartbeatHandle:
        """Call ``callback`` every ``interval`` seconds, first after one interval."""
        if not interval > 0:
            raise ValueError(f"heartbeat interval must be > 0 seconds, got {interval!r}")
        handle = HeartbeatHandle(interval, callback)
        handle._on_cancel = self._forget
        with self._live_lock:
            self._live.add(handle)
        self._arm(handle, self.clock.now() + interval)
        return handle

    @property
    def pending(self) -> int:
        """Number of live (not cancelled) jobs."""
        with self._live_lock:
            return len(self._live)

    def _forget(self, handle: HeartbeatHandle) -> None:
        with self._live_lock:
            self._live.discard(handle)

    def _arm(self, handle: HeartbeatHandle, due: float) -> None:
        def fire() -> None:
            if handle._fire():
                self._arm(handle, max(due + handle.interval, self.clock.now()))
            else:
                self._forget(handle)

        with handle._lock:
            if handle._cancelled:
                return
            handle._timer = self.clock.call_later(due - self.clock.now(), fire)


class _ThreadTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ThreadClock:
    """A :class:`~acp_adapter.clock.Clock` whose timers one lazily started daemon thread
    serves from a heap of deadlines (callable from any thread; callbacks run on that thread)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _ThreadTimer]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def stopped(self) -> bool:
        return self._stopped

    def now(self) -> float:
        return self._clock()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = _ThreadTimer(callback)
        with self._cond:
            if self._stopped:
                timer.cancelled = True
                return timer
            heapq.heappush(self._heap, (self._clock() + max(0.0, delay), next(self._seq), timer))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="acp-progress-heartbeat", daemon=True)
                self._thread.start()
            self._cond.notify()
        return timer

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    while self._heap and self._heap[0][2].cancelled:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    due, _, timer = self._heap[0]
                    delay = due - self._clock()
                    if delay <= 0:
                        heapq.heappop(self._heap)
                        break
                    self._cond.wait(delay)
            if not timer.cancelled:
                try:
                    timer.callback()
                except Exception:
                    log.exception("timer callback failed")


class HeartbeatScheduler(Heartbeats):
    """Heartbeats on one shared daemon thread (:class:`ThreadClock`): the loop-less mode."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._timers = ThreadClock(clock)
        super().__init__(self._timers)

    @property
    def _thread(self) -> threading.Thread | None:
        """The scheduler thread, or None while no job was ever scheduled."""
        return self._timers._thread

    def every(self, interval: float, callback: Callable[[], None]) -> HeartbeatHandle:
        if self._timers.stopped:
            raise RuntimeError("heartbeat scheduler is stopped")
        return super().every(interval, callback)

    def stop(self) -> None:
        self._timers.stop()


class _LoopTimer:
    """A timer armed on the loop from another thread; once ``cancel`` returned (from any thread)
    its callback never starts."""

    __slots__ = ("_callback", "_handle", "_lock", "_loop", "cancelled")

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        self._loop = loop
        self._callback = callback
        self._lock = threading.Lock()
        self._handle: asyncio.TimerHandle | None = None
        self.cancelled = False

    def arm(self, due: float) -> None:
        """On the loop thread: schedule the callback at ``due`` (loop time) unless cancelled."""
        with self._lock:
            if not self.cancelled:
                self._handle = self._loop.call_at(due, self._run)

    def _run(self) -> None:
        with self._lock:
            if self.cancelled:
                return  # cancelled from another thread after the loop had it ready to run
            self._handle = None
        self._callback()

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(RuntimeError):  # a closed loop runs nothing anyway
                self._loop.call_soon_threadsafe(handle.cancel)


class LoopThreadClock:
    """The event loop's clock, with ``call_later`` callable from any thread.

    From the loop's own thread it is ``loop.call_later``; from another thread (the agent turn's
    worker) the timer is armed with ``call_soon_threadsafe`` at the deadline computed when asked.
    Callbacks always run on the loop thread. A closed loop arms nothing (and logs why).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def now(self) -> float:
        return self._loop.time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            return self._loop.call_later(max(0.0, delay), callback)
        timer = _LoopTimer(self._loop, callback)
        due = self._loop.time() + max(0.0, delay)
        try:
            self._loop.call_soon_threadsafe(timer.arm, due)
        except RuntimeError:
            log.warning("heartbeat not armed: the event loop is closed")
            timer.cancelled = True
        return timer


def loop_heartbeats(loop: asyncio.AbstractEventLoop) -> Heartbeats:
    """Heartbeats served by ``loop`` itself (``call_later``): no thread of their own."""
    return Heartbeats(LoopThreadClock(loop))


_default: HeartbeatScheduler | None = None
_default_lock = threading.Lock()


def default_scheduler() -> HeartbeatScheduler:
    """The process-wide thread scheduler shared by every loop-less caller."""
    global _default
    with _default_lock:
        if _default is None:
            _default = HeartbeatScheduler()
        return _default
