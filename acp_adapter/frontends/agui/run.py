"""One run's lock and outbox: every event of a run is produced and queued under one lock.

The driver's update pump, a tool-progress callback, a summary generator and run
finalisation may all try to write to the same run at once, from the event loop or from other
threads. :class:`RunEmitter` serialises them with one ``threading.Lock``: projection *and* queueing
happen inside it, so the outbox order is the order the lock was taken, and once the terminal event
(or an abandon on disconnect) is queued, every later write is ignored — nothing can land after
``RUN_FINISHED``/``RUN_ERROR`` (nothing after the end: concurrent callbacks and run finalization
use the same lock).

The outbox is drained by exactly one consumer (the SSE writer) on the event loop; producers on other
threads wake it with ``call_soon_threadsafe``.

The outbox is bounded (every input is bounded): a reader that stops reading must not grow it. Past
``max_queued`` events an ``ACTIVITY_SNAPSHOT`` that replaces its activity takes the place of that
activity's snapshot still in the queue (latest wins, at the older position, so it can never move
after the tool's result), and the driver's update pump waits in :meth:`RunEmitter.writable` until
the reader took the queue — backpressure on the ACP update stream instead of memory. While the
reader keeps up nothing is coalesced: every snapshot is delivered.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from ag_ui.core import ActivitySnapshotEvent, BaseEvent, RunErrorEvent, RunFinishedEvent

from acp_adapter.frontends.agui.limits import DEFAULT_MAX_QUEUED_EVENTS
from acp_adapter.frontends.agui.projection import RunProjection

log = logging.getLogger("acp_progress.agui.run")


def is_terminal(event: BaseEvent) -> bool:
    return isinstance(event, RunFinishedEvent | RunErrorEvent)


class RunEmitter:
    """Thread-safe front of a :class:`RunProjection`, feeding an outbox that one consumer drains."""

    def __init__(
        self,
        projection: RunProjection,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        max_queued: int = DEFAULT_MAX_QUEUED_EVENTS,
    ) -> None:
        self.projection = projection
        self.max_queued = max_queued
        self._lock = threading.Lock()
        self._outbox: list[BaseEvent] = []
        #: where each activity's replacing snapshot sits in the outbox (cleared with the outbox)
        self._queued_activity: dict[str, int] = {}
        self.coalesced = 0
        self._loop = loop
        self._wake = asyncio.Event() if loop is not None else None
        self._room = asyncio.Event() if loop is not None else None
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

    def finish(self, *, cancelled: bool = False, stop_reason: str | None = None, tokens: Any = None) -> bool:
        return self._write(
            lambda: self.projection.finish(cancelled=cancelled, stop_reason=stop_reason, tokens=tokens)
        )

    def interrupt(self, interrupts: list[Any]) -> bool:
        """End this run's stream with ``RUN_FINISHED`` (outcome ``interrupt``); the turn goes on paused."""
        return self._write(lambda: self.projection.interrupt(interrupts))

    def fail(self, message: str, *, code: str | None = None) -> bool:
        return self._write(lambda: self.projection.error(message, code=code))

    def abandon(self) -> None:
        """The client disconnected: nothing more is written, not even a terminal event."""
        with self._lock:
            self._ended = True
            self.projection.abandon()
        self._notify()
        self._make_room()

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
            for event in events:
                self._queue(event)
            if events and is_terminal(events[-1]):
                self._ended = True
        if events:
            self._notify()
        return bool(events)

    def _queue(self, event: BaseEvent) -> None:
        """Append ``event`` (under the lock); past ``max_queued`` a snapshot replaces its queued one."""
        if isinstance(event, ActivitySnapshotEvent) and event.replace is not False:
            index = self._queued_activity.get(event.message_id)
            if index is not None and len(self._outbox) >= self.max_queued:
                self._outbox[index] = event
                self.coalesced += 1
                return
            self._queued_activity[event.message_id] = len(self._outbox)
        self._outbox.append(event)

    @property
    def queued(self) -> int:
        """Events waiting for the reader."""
        with self._lock:
            return len(self._outbox)

    @property
    def over_limit(self) -> bool:
        """More than ``max_queued`` events wait (a lock-free peek: the update pump checks it for
        every update, and only then awaits :meth:`writable`)."""
        return len(self._outbox) > self.max_queued and not self._ended

    async def writable(self) -> None:
        """Wait while the outbox holds more than ``max_queued`` events; for the update pump.

        At exactly ``max_queued`` the pump goes on: an update whose snapshot replaces a queued one
        does not grow the queue; the first one that does makes the pump wait for the reader.
        Returns at once when the run ended (later writes are ignored).
        """
        if self._room is None:
            return
        while True:
            with self._lock:
                if self._ended or len(self._outbox) <= self.max_queued:
                    return
                self._room.clear()
            await self._room.wait()

    def _make_room(self) -> None:
        if self._room is None or self._room.is_set():
            return
        self._set_on_loop(self._room)

    def _notify(self) -> None:
        if self._wake is not None:
            self._set_on_loop(self._wake)

    def _set_on_loop(self, event: asyncio.Event) -> None:
        """Set ``event`` of the run's loop from whichever thread is calling (directly on the loop)."""
        if self._loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            event.set()
        else:
            self._loop.call_soon_threadsafe(event.set)

    # ------------------------------------------------------------------ the consumer (event loop)

    def drain(self) -> list[BaseEvent]:
        """Take every queued event, in order."""
        with self._lock:
            events, self._outbox = self._outbox, []
            self._queued_activity.clear()
        if events:
            self._make_room()
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
