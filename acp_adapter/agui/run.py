"""One run's lock and outbox: every event of a run is produced and queued under one lock.

The driver's update pump, a tool-progress callback, a summary generator (issue 10) and run
finalisation may all try to write to the same run at once, from the event loop or from other
threads. :class:`RunEmitter` serialises them with one ``threading.Lock``: projection *and* queueing
happen inside it, so the outbox order is the order the lock was taken, and once the terminal event
(or an abandon on disconnect) is queued, every later write is ignored — nothing can land after
``RUN_FINISHED``/``RUN_ERROR`` (seed 001: "Concurrent callbacks and run finalization use the same
lock").

The outbox is drained by exactly one consumer (the SSE writer) on the event loop; producers on other
threads wake it with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from ag_ui.core import BaseEvent, RunErrorEvent, RunFinishedEvent

from .projection import RunProjection

__all__ = ["RunEmitter", "is_terminal"]

log = logging.getLogger("acp_progress.agui.run")


def is_terminal(event: BaseEvent) -> bool:
    return isinstance(event, RunFinishedEvent | RunErrorEvent)


class RunEmitter:
    """Thread-safe front of a :class:`RunProjection`, feeding an outbox that one consumer drains."""

    def __init__(self, projection: RunProjection, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.projection = projection
        self._lock = threading.Lock()
        self._outbox: collections.deque[BaseEvent] = collections.deque()
        self._loop = loop
        self._wake = asyncio.Event() if loop is not None else None
        self._ended = False  # a terminal event was queued, or the run was abandoned

    @property
    def run_id(self) -> str:
        return self.projection.run_id

    @property
    def closed(self) -> bool:
        with self._lock:
            return self._ended

    # ------------------------------------------------------------------ producers (any thread)

    def start(self) -> bool:
        return self._write(self.projection.start)

    def feed(self, update: Any) -> bool:
        """Project one ACP update; ``False`` when it was ignored because the run is closed."""
        return self._write(lambda: self.projection.project(update))

    def emit_activity(
        self, message_id: str, activity_type: str, content: Mapping[str, Any], *, replace: bool = True
    ) -> bool:
        """Publish an ``ACTIVITY_SNAPSHOT`` under the run lock (for summaries and other projections)."""
        return self._write(
            lambda: self.projection.activity(message_id, activity_type, content, replace=replace)
        )

    def finish(self, *, cancelled: bool = False, stop_reason: str | None = None) -> bool:
        return self._write(lambda: self.projection.finish(cancelled=cancelled, stop_reason=stop_reason))

    def fail(self, message: str, *, code: str | None = None) -> bool:
        return self._write(lambda: self.projection.error(message, code=code))

    def abandon(self) -> None:
        """The client disconnected: nothing more is written, not even a terminal event."""
        with self._lock:
            self._ended = True
            self.projection.abandon()
        self._notify()

    def _write(self, produce: Callable[[], list[BaseEvent]]) -> bool:
        with self._lock:
            if self._ended:
                return False
            try:
                events = produce()
            except Exception:
                # a projection bug must not take the run down; the update is lost, the run goes on
                log.exception("AG-UI projection failed; update dropped")
                return False
            self._outbox.extend(events)
            if events and is_terminal(events[-1]):
                self._ended = True
        if events:
            self._notify()
        return bool(events)

    def _notify(self) -> None:
        if self._loop is None or self._wake is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wake.set()
        else:
            self._loop.call_soon_threadsafe(self._wake.set)

    # ------------------------------------------------------------------ the consumer (event loop)

    def drain(self) -> list[BaseEvent]:
        """Take every queued event, in order."""
        with self._lock:
            events = list(self._outbox)
            self._outbox.clear()
            return events

    @property
    def finished(self) -> bool:
        """Closed and fully drained: the consumer has nothing more to wait for."""
        with self._lock:
            return self._ended and not self._outbox

    async def events(self) -> AsyncIterator[BaseEvent]:
        """Yield events as they are queued until the terminal one (or an abandon) was taken."""
        async for batch in self.batches():
            for event in batch:
                yield event

    async def batches(self) -> AsyncIterator[list[BaseEvent]]:
        """Yield everything queued so far as one batch, waiting only when nothing is queued.

        An SSE writer sends a batch in one write: a burst of updates costs one socket write, not
        one per event, and no event waits for a later one. Ends after the terminal event (or an
        abandon).
        """
        if self._wake is None:
            raise RuntimeError("RunEmitter.batches() needs an emitter bound to an event loop")
        while True:
            self._wake.clear()
            batch = self.drain()
            for index, event in enumerate(batch):
                if is_terminal(event):
                    yield batch[: index + 1]
                    return
            if batch:
                yield batch
            if self.finished:
                return
            if not batch:
                await self._wake.wait()
