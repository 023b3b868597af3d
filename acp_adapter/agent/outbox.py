"""The one ordered delivery path from any thread to the ACP connection.

Updates are appended to a deque synchronously (so their order is the order the code made them,
whatever thread made them) and a single pump task on the event loop sends them. ``flush()`` is the
barrier a prompt awaits before it answers, so all of a turn's updates precede the response.
Observers (bridges, AG-UI, summaries) see exactly the updates handed to the connection, in order.

Tool progress never waits for a slow client (every input is bounded: a peer that stops reading
cannot grow memory, and a card shows its latest progress, not a backlog): while a progress
update of a card still waits to be sent, a newer one for the same card *replaces* it in its place
(:meth:`UpdateOutbox.submit_latest`: latest wins, position kept — or, with a ``fold``, the newer
update is folded into the queued one, so a card's latest value and its latest status line both
survive). Updates of different cards are
never merged, and starts, terminal updates, text and permission requests are never dropped or
reordered. So a tool that reports 20,000 values to a client reading 1,000 a second runs at its own
speed, and the client ends with the last value and the terminal update.

Replacing only helps while the update is still here: once sent, it waits in the transport's buffer
(up to the 1 MiB write high-water mark) and the kernel's (a 64 KiB pipe) where nothing replaces it,
and a slow editor reads values seconds old. So with a ``backlog`` probe (what the peer has not read
yet, :mod:`acp_adapter.protocol.backlog`; the server passes one for real stdio), the pump *holds* a
progress update at the head of the queue while the editor has more than :data:`HOLD_ABOVE` bytes
unread and only replaceable progress is queued: newer values keep replacing it, and the pump
re-checks about every millisecond. Anything else queued behind it (a start, a terminal update,
text, a permission request, usage, a ``flush()`` barrier, closing) releases everything in order at
once, so holding never reorders, never drops anything but superseded progress, and never delays a
prompt's answer. An editor that reads 1,000 lines a second then holds values about one read
interval old, not hundreds, and the tool still never waits.

Other producer threads that outrun the connection (streamed text) are paced by
:meth:`UpdateOutbox.wait_for_room`, so the backlog and its memory stay bounded.

:func:`shared_outbox` gives every caller that names the same connection the same outbox, so
callbacks made separately for one connection (``make_agent_progress_cb``, ``make_thinking_cb``,
a :class:`~acp_adapter.agent.turn.ProgressTurn`) still share one ordered path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeAlias, TypeVar

from acp.helpers import SessionUpdate
from acp.schema import UsageUpdate

from acp_adapter.protocol.backlog import BacklogProbe
from acp_adapter.protocol.observer import Observers
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.events")

AnyUpdate: TypeAlias = SessionUpdate | UsageUpdate
"""Every ``session/update`` payload this package sends: the SDK's ``SessionUpdate`` union, plus
``UsageUpdate`` (which that union does not list)."""

UpdateBuild: TypeAlias = Callable[[], AnyUpdate]
"""Makes a queued update on the event loop, just before it is sent (:meth:`UpdateOutbox.submit_latest`)."""


V = TypeVar("V")

#: Backlog at which :meth:`UpdateOutbox.wait_for_room` makes a producer thread wait …
PACE_HIGH = 256
#: … until the pump has drained it below this (a gap, so a paced producer is not woken per update).
PACE_LOW = 64
#: Longest a producer waits for a pump that does not drain (a stopped loop); pacing is then off
#: until the pump runs again, so a dead loop costs a tool one wait, not one per report.
PACE_TIMEOUT = 1.0

#: Progress is held while the peer has more than this many bytes unread. Less than one progress
#: line (300 to 400 bytes; an AF_UNIX socket counts a few hundred more per line), so it means
#: "anything unread": a client that pulls a line only when it wants the next one then finds at most
#: one progress line waiting, whose value is at most about one of its read intervals old. Allowing
#: two or three waiting lines (1 KiB) lets that client read values two or three intervals old.
HOLD_ABOVE = 256
#: While holding, the pump asks the probe again after this long (the first re-check comes after
#: one turn of the event loop, for a client on the same loop) …
HOLD_POLL = 0.001
#: … and, while the peer's backlog does not change, after a quarter of the time it has not changed,
#: up to this long: a client that stopped reading costs 40 wake-ups a second instead of 1,000,
#: and one that reads every R seconds is noticed within R/4 of a read.
HOLD_POLL_MAX = 0.025
#: While the pump's re-check is due, a producer replacing held progress offers the loop the GIL
#: at most this often (see :meth:`UpdateOutbox.submit_latest`): once per re-check keeps the
#: client's value fresh (p95 1.3 to 2 read intervals measured; 4 to 8 with no offer) and costs
#: the tool nothing measurable; four times as often cost it 10 to 20%.
HOLD_HANDOVER = 0.001


class SessionUpdateSink(Protocol):
    """Anything that can deliver a session update: the SDK's agent-side connection is one."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None: ...


@dataclass(slots=True)
class _Barrier:
    future: asyncio.Future[None]


@dataclass(slots=True)
class _Item:
    session_id: str
    update: AnyUpdate | None
    #: builds ``update`` on the loop, just before it is sent (see :meth:`UpdateOutbox.submit_latest`)
    build: Callable[[], AnyUpdate] | None = None
    #: set for an update a newer one with the same key may replace while queued (``submit_latest``)
    key: object = None


class UpdateOutbox:
    """One ordered delivery path for every session of one connection.

    ``submit`` is safe from any thread; it never blocks on I/O. Observers (bridges, AG-UI,
    summaries) see exactly the updates that were handed to the connection, in the same order.
    """

    def __init__(
        self,
        sink: SessionUpdateSink,
        loop: asyncio.AbstractEventLoop,
        *,
        backlog: BacklogProbe | None = None,
        hold_above: int = HOLD_ABOVE,
    ) -> None:
        self._sink = sink
        self._loop = loop
        self._items: deque[_Item | _Barrier] = deque()
        self._wake_scheduled = False
        #: the pump is inside its drain loop and will see anything appended: no wake needed
        self._draining = False
        self._event: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        #: per session, what watches its updates beside the client (summaries, the recorder);
        #: each sees an update just before it is sent, in the order the client gets them
        self._observers: dict[str, Observers] = {}
        self.sent = 0
        self.failed = 0
        self._room = threading.Event()
        self._room.set()
        self._pacing = True
        #: the queued item of each replaceable key, and the lock that makes replacing it and the
        #: pump taking it one decision (a replacement is never lost between the two threads)
        self._latest: dict[object, _Item] = {}
        self._latest_lock = threading.Lock()
        #: progress updates replaced in the queue by newer ones of the same card
        self.replaced = 0
        #: bytes the peer has not read yet (None: unknown, progress is never held); see HOLD_ABOVE
        self.backlog = backlog
        self.hold_above = hold_above
        #: times the pump held a progress update because the peer had unread bytes
        self.holds = 0
        #: while it holds, when the pump asks the probe again (``time.monotonic``); else infinity
        self._hold_due = math.inf

    def observers(self, session_id: str) -> Observers:
        """The observers of one session's updates (made on first use); add and discard there."""
        observers = self._observers.get(session_id)
        if observers is None:
            observers = self._observers[session_id] = Observers(name="session observer")
        return observers

    def forget_observers(self, session_id: str) -> None:
        """A session that went away: its (empty or stale) observer set goes too."""
        self._observers.pop(session_id, None)

    def submit(self, session_id: str, update: AnyUpdate) -> None:
        self._items.append(_Item(session_id, update))
        self._schedule_wake(first=len(self._items) == 1)

    def submit_latest(
        self,
        session_id: str,
        key: object,
        build: UpdateBuild,
        fold: Callable[[UpdateBuild, UpdateBuild], UpdateBuild] | None = None,
    ) -> None:
        """Queue an update that ``build`` makes on the event loop, for a state that only its newest
        value matters of (a tool card's progress): if an update with ``key`` still waits in the
        queue, ``build`` replaces it there (latest wins, position kept); otherwise it is queued at
        the end. Never blocks. ``fold(queued, build)``, when given, says what replaces the queued
        build instead (a state of several parts, each of which only its newest value matters of);
        it runs under the queue's lock, so it must be quick and must not raise.

        For the busiest producer (a tool reporting progress from its worker thread): the facts
        are queued as they are and the validated schema object is made on the loop right before
        it is serialised. Built in the producer's thread, the objects are made on one core and
        read on another while the two threads trade the GIL, which costs the burst about a tenth
        of its throughput. ``build`` must be pure (it runs later, on another thread); one that
        raises is logged and counted as failed, and the pump goes on."""
        with self._latest_lock:
            queued = self._latest.get(key)
            if queued is not None:
                assert queued.build is not None  # every replaceable update is built on the loop
                queued.build = build if fold is None else fold(queued.build, build)
                self.replaced += 1
            else:
                item = _Item(session_id, None, build, key)
                self._latest[key] = item
                self._items.append(item)
        if queued is None:
            self._schedule_wake(first=len(self._items) == 1)
            return
        now = time.monotonic()
        if now >= self._hold_due:
            # the pump holds this card's progress and its re-check is due: offer the loop the GIL,
            # or a tool reporting in a tight loop keeps it for the whole switch interval (5 ms) and
            # the client's value ages by as much; at most every HOLD_HANDOVER, as the loop may not
            # be awake yet and each offer costs the tool. Outside the lock, which the pump's
            # re-check takes.
            self._hold_due = now + HOLD_HANDOVER
            time.sleep(0)

    def wait_for_room(self) -> None:
        """Block a producer thread while the backlog is at :data:`PACE_HIGH` or more.

        Call it outside any lock the event loop might need (the pump that makes room runs there).
        It returns at once on the loop's own thread, which must never wait for itself.
        """
        if len(self._items) < PACE_HIGH or not self._pacing or self._on_own_loop():
            return
        self._room.clear()
        # the pump sets the event once it has drained below PACE_LOW; checking again after the
        # clear closes the race with a pump that drained in between
        if len(self._items) >= PACE_HIGH and not self._room.wait(PACE_TIMEOUT):
            self._pacing = False
            log.debug("the outbox is not draining; producers are no longer paced")

    async def aclose(self) -> None:
        """Deliver what is queued, then stop the pump (for owners that outlive their loop's run)."""
        await self.flush()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def flush(self) -> None:
        """Return once everything submitted before this call has been written (or has failed)."""
        await self.barrier()

    def barrier(self) -> asyncio.Future[None]:
        """A future done once everything submitted before this call has been written (or has
        failed): :meth:`flush` for a caller that awaits a future, not a coroutine (the prompt,
        through its cancellation), with no task to make on the way to its first card. Call it on
        the loop's thread."""
        future: asyncio.Future[None] = self._loop.create_future()
        self._items.append(_Barrier(future))
        self._wake()
        return future

    def _schedule_wake(self, first: bool) -> None:
        if self._wake_scheduled or self._draining:
            # a burst behind a draining pump costs no self-pipe write and no loop wake-up per update
            return
        self._wake_scheduled = True
        if self._on_own_loop():
            # on the loop itself the pump is woken now, not a loop iteration later: the think card
            # of a prompt goes out on the very next iteration (one hop less to the first spinner)
            self._wake()
        else:
            try:
                self._loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # loop closed: the connection is gone, nothing can be delivered
                self._wake_scheduled = False
                return
            if first:
                # hand the GIL over so the woken loop sends this update now, not a switch interval
                # later; behind queued updates (a burst) the loop is already busy sending, and
                # yielding on every one would only multiply thread switches
                time.sleep(0)

    def _on_own_loop(self) -> bool:
        """Whether the caller runs on this outbox's event loop (its thread, inside the loop)."""
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def _wake(self) -> None:
        self._wake_scheduled = False
        if self._event is None:
            self._event = asyncio.Event()
        if self._task is None or self._task.done():
            self._task = self._loop.create_task(self._pump(), name="acp-progress-outbox")
        self._event.set()

    async def _pump(self) -> None:
        assert self._event is not None
        hold = _HoldPoll()
        try:
            while True:
                self._draining = True
                held: int | None = None
                while self._items:
                    held = self._held_backlog()
                    if held is not None:
                        break
                    if hold.holding:
                        hold.reset()
                        self._hold_due = math.inf
                    item = self._items.popleft()
                    if len(self._items) < PACE_LOW and not self._room.is_set():
                        self._pacing = True
                        self._room.set()
                    if isinstance(item, _Barrier):
                        if not item.future.done():
                            item.future.set_result(None)
                        continue
                    if item.key is not None:
                        with self._latest_lock:  # from here on a newer update queues anew
                            if self._latest.get(item.key) is item:
                                del self._latest[item.key]
                    await self._deliver(item)
                # in this order: a producer that saw ``_draining`` still set appended before the
                # check below, which then finds its item; one that sees it cleared wakes the pump
                self._draining = False
                self._event.clear()
                if held is not None:
                    # checked again after the clear: whatever is queued from now on wakes the pump
                    held = self._held_backlog()
                    if held is not None:
                        await self._wait_held(hold, held)
                    continue
                if self._items:
                    continue
                await self._event.wait()
        finally:
            self._draining = False  # a pump that stopped (cancelled) must not silence later wakes
            self._hold_due = math.inf

    def _held_backlog(self) -> int | None:
        """The peer's unread bytes if the head of the queue is progress to keep queued (so newer
        values replace it): only replaceable updates are queued and the peer has more than
        ``hold_above`` bytes unread. None: send the head now.

        Every queued replaceable update is in ``_latest`` (both change under ``_latest_lock``; the
        head stays in both while held), so a queue longer than ``_latest`` holds something else —
        a start, a terminal update, text, a barrier — and everything goes out in order."""
        if self.backlog is None:
            return None
        head = self._items[0]
        if not isinstance(head, _Item) or head.key is None:
            return None
        with self._latest_lock:
            if len(self._items) != len(self._latest):
                return None
        unread = self.backlog()
        if unread is None or unread <= self.hold_above:
            return None
        return unread

    async def _wait_held(self, hold: _HoldPoll, unread: int) -> None:
        """Wait for a wake (anything queued, a flush) or the next re-check of the peer's backlog."""
        assert self._event is not None
        if not hold.holding:
            self.holds += 1
        delay = hold.next_delay(unread, time.monotonic())
        self._hold_due = time.monotonic() + delay
        if delay == 0.0:
            await asyncio.sleep(0)  # one turn of the loop: a client on this loop reads meanwhile
            return
        timer = self._loop.call_later(delay, self._event.set)
        try:
            await self._event.wait()
        finally:
            timer.cancel()

    async def _deliver(self, item: _Item) -> None:
        update = item.update
        if update is None:
            assert item.build is not None
            try:
                update = item.build()
            except Exception as exc:
                self.failed += 1
                log.error(
                    "could not build a session update (%s)", redact_text(str(exc)) or type(exc).__name__
                )
                return
        observers = self._observers.get(item.session_id)
        if observers:
            observers.observe(update)
        try:
            await self._sink.session_update(session_id=item.session_id, update=update)
            self.sent += 1
        except Exception as exc:
            self.failed += 1
            log.warning(
                "could not deliver a session update (%s)", redact_text(str(exc)) or type(exc).__name__
            )


@dataclass(slots=True)
class _HoldPoll:
    """When the pump next asks the probe while it holds progress: after one turn of the loop,
    then every :data:`HOLD_POLL`, slower while the peer's backlog stays the same (see
    :data:`HOLD_POLL_MAX`)."""

    holding: bool = False
    last_unread: int = -1
    unchanged_since: float = 0.0

    def reset(self) -> None:
        self.holding = False

    def next_delay(self, unread: int, now: float) -> float:
        if not self.holding:
            self.holding = True
            self.last_unread, self.unchanged_since = unread, now
            return 0.0
        if unread != self.last_unread:
            self.last_unread, self.unchanged_since = unread, now
        return min(HOLD_POLL_MAX, max(HOLD_POLL, (now - self.unchanged_since) / 4))


class PerConnection(Generic[V]):
    """A value per connection object, by identity (connections need not be hashable), forgotten
    when the connection is garbage-collected.

    The weakref callback that reports a collected connection may run at any allocation in any
    thread, including inside ``make()`` while :meth:`get` holds the lock. So the callback takes no
    lock: it only appends the dead key to a deque (atomic), and :meth:`get` purges dead keys under
    the lock. ``make()`` itself runs outside the lock, so it may allocate, collect or even call
    :meth:`get` again; when two threads race to make a value, the first stored one wins.
    """

    def __init__(self) -> None:
        self._values: dict[int, tuple[Callable[[], object], V]] = {}
        self._lock = threading.Lock()
        self._dead: deque[int] = deque()

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._values)

    def get(self, conn: object, make: Callable[[], V]) -> V:
        key = id(conn)
        with self._lock:
            self._purge()
            entry = self._values.get(key)
            if entry is not None and entry[0]() is conn:
                return entry[1]
        value = make()
        ref: Callable[[], object]
        try:
            ref = weakref.ref(conn, lambda _r: self._dead.append(key))
        except TypeError:  # cannot be weakly referenced: keep it alive with its value

            def ref() -> object:
                return conn

        with self._lock:
            self._purge()
            entry = self._values.get(key)
            if entry is not None and entry[0]() is conn:  # another thread made it first
                return entry[1]
            self._values[key] = (ref, value)
            return value

    def _purge(self) -> None:
        """Forget the connections whose weakref callbacks fired (called with the lock held)."""
        while self._dead:
            key = self._dead.popleft()
            entry = self._values.get(key)
            if entry is not None and entry[0]() is None:
                del self._values[key]


_SHARED: PerConnection[UpdateOutbox] = PerConnection()


def shared_outbox(
    conn: SessionUpdateSink, loop: asyncio.AbstractEventLoop, *, backlog: BacklogProbe | None = None
) -> UpdateOutbox:
    """The outbox of ``conn`` on ``loop`` (created on first use): one ordered path per connection.

    ``backlog`` (what the peer has not read yet) lets the outbox hold tool progress for a slow
    client; it applies when the outbox is created, and a later caller's is kept if none was set."""
    outbox = _SHARED.get(conn, lambda: UpdateOutbox(conn, loop, backlog=backlog))
    if outbox.backlog is None and backlog is not None:
        outbox.backlog = backlog
    if outbox._loop is not loop:
        raise RuntimeError("a connection's updates must all be sent from the loop it runs on")
    return outbox
