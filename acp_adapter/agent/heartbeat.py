"""One scheduler thread for every heartbeat of every session.

The seed pattern starts a ``threading.Timer`` per model call; with thousands of open sessions that
is a thread per waiting call. Here a single daemon thread keeps a heap of deadlines and runs the
due callbacks. Callbacks must be quick and non-blocking (they hand an update to the event loop).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

__all__ = ["HeartbeatHandle", "HeartbeatScheduler", "default_scheduler"]

log = logging.getLogger("acp_progress.heartbeat")


class HeartbeatHandle:
    """A repeating job. ``cancel()`` returns only once the job can never run again.

    The per-handle lock is held while the callback runs, so a cancel from another thread waits
    for a callback in flight instead of racing it; a cancel from inside the callback is allowed
    (the lock is re-entrant).
    """

    __slots__ = ("_cancelled", "_lock", "callback", "interval")

    def __init__(self, interval: float, callback: Callable[[], None]) -> None:
        self.interval = interval
        self.callback = callback
        self._lock = threading.RLock()
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True

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


class HeartbeatScheduler:
    """A heap of deadlines served by one lazily started daemon thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, HeartbeatHandle]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def every(self, interval: float, callback: Callable[[], None]) -> HeartbeatHandle:
        """Call ``callback`` every ``interval`` seconds, first after one interval."""
        if not interval > 0:
            raise ValueError(f"heartbeat interval must be > 0 seconds, got {interval!r}")
        handle = HeartbeatHandle(interval, callback)
        with self._cond:
            if self._stopped:
                raise RuntimeError("heartbeat scheduler is stopped")
            heapq.heappush(self._heap, (self._clock() + interval, next(self._seq), handle))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="acp-progress-heartbeat", daemon=True)
                self._thread.start()
            self._cond.notify()
        return handle

    @property
    def pending(self) -> int:
        """Number of live (not cancelled) jobs; cancelled ones are dropped lazily."""
        with self._cond:
            return sum(1 for _, _, h in self._heap if not h.cancelled)

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
                    due, _, handle = self._heap[0]
                    delay = due - self._clock()
                    if delay <= 0:
                        heapq.heappop(self._heap)
                        break
                    self._cond.wait(delay)
            if handle._fire():
                with self._cond:
                    if not self._stopped:
                        # Schedule from the deadline, not from now, so beats do not drift.
                        next_due = max(due + handle.interval, self._clock())
                        heapq.heappush(self._heap, (next_due, next(self._seq), handle))


_default: HeartbeatScheduler | None = None
_default_lock = threading.Lock()


def default_scheduler() -> HeartbeatScheduler:
    """The process-wide scheduler shared by all sessions."""
    global _default
    with _default_lock:
        if _default is None:
            _default = HeartbeatScheduler()
        return _default
