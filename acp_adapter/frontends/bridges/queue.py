"""The route queue: one ordered queue per route, shared by progress and answer text.

Backpressure rules (every input is bounded: a slow chat platform cannot grow the queue, and a
person sees the latest state rather than a backlog):

* cumulative answer text coalesces: a newer snapshot of the same segment replaces the queued
  one in place (it is a superset, so nothing is lost);
* progress coalesces only when ``tool_call_id`` *and* ``phase`` both match; distinct tool calls
  are never merged into each other's status;
* a progress summary coalesces with the turn's unsent one (only the latest revision matters);
* coalescing never reaches across a turn boundary (``TurnStart``/``TurnEnd``): segment numbers
  restart each turn, and a newer turn's text or summary must not overwrite an older turn's;
* at the soft bound, the oldest queued intermediate ``started`` line is evicted to make room
  (or, when there is none to evict, an incoming ``started`` line, reaction, summary or typing is
  dropped); each drop is counted by reason in ``delivery_dropped_by_reason``;
* terminal progress, final (turn end), error and delete events are never dropped, even past
  the soft bound: degradation costs status visibility, never the outcome.

Single consumer (the route's delivery worker), any number of producers on the same loop.
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass, field
from typing import Any, Final

from acp_adapter.errors import AcpProgressError
from acp_adapter.frontends.bridges.events import (
    AnswerText,
    BridgeEvent,
    PlanUpdate,
    ProgressEvent,
    ReactionEvent,
    SummaryUpdate,
    TurnEnd,
    TurnStart,
    TypingEvent,
    is_terminal,
)

DEFAULT_SOFT_BOUND: Final = 256

EVICTED_STARTED: Final = "evicted_started"
DROPPED_STARTED: Final = "queue_full_started"
DROPPED_REACTION: Final = "queue_full_reaction"
DROPPED_SUMMARY: Final = "queue_full_summary"
DROPPED_TYPING: Final = "queue_full_typing"


class QueueClosed(AcpProgressError):
    """``get`` on a closed, drained queue: the route is shutting down."""


@dataclass
class QueueMetrics:
    """Delivery counters of one route, shown by ``bridge show`` and logged at exit."""

    enqueued: int = 0
    delivered: int = 0
    coalesced: int = 0
    max_depth: int = 0
    over_soft_bound: int = 0
    delivery_dropped_by_reason: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        self.delivery_dropped_by_reason[reason] = self.delivery_dropped_by_reason.get(reason, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "enqueued": self.enqueued,
            "delivered": self.delivered,
            "coalesced": self.coalesced,
            "max_depth": self.max_depth,
            "over_soft_bound": self.over_soft_bound,
            "delivery_dropped_by_reason": dict(self.delivery_dropped_by_reason),
        }

    def merge(self, other: QueueMetrics) -> None:
        """Add another route's counters into this one (instance-wide totals)."""
        self.enqueued += other.enqueued
        self.delivered += other.delivered
        self.coalesced += other.coalesced
        self.max_depth = max(self.max_depth, other.max_depth)
        self.over_soft_bound += other.over_soft_bound
        for reason, n in other.delivery_dropped_by_reason.items():
            self.delivery_dropped_by_reason[reason] = self.delivery_dropped_by_reason.get(reason, 0) + n


def _coalesce_key(event: BridgeEvent) -> tuple[Any, ...] | None:
    if isinstance(event, AnswerText):
        return ("text", event.segment)
    if isinstance(event, ProgressEvent):
        return ("progress", event.payload.tool_call_id, event.payload.phase)
    if isinstance(event, SummaryUpdate):
        return ("summary",)
    if isinstance(event, PlanUpdate):
        return ("plan",)
    return None


def _evictable(event: BridgeEvent) -> bool:
    return isinstance(event, ProgressEvent) and event.payload.phase == "started"


class RouteQueue:
    """Ordered, coalescing, soft-bounded queue of :data:`BridgeEvent` for one route."""

    def __init__(self, soft_bound: int = DEFAULT_SOFT_BOUND, metrics: QueueMetrics | None = None) -> None:
        if soft_bound < 1:
            raise ValueError("soft_bound must be >= 1")
        self.soft_bound = soft_bound
        self.metrics = metrics or QueueMetrics()
        # Each queued event sits in a one-element cell, so coalescing replaces it in place in O(1).
        self._items: collections.deque[list[BridgeEvent]] = collections.deque()
        self._cells: dict[tuple[Any, ...], list[BridgeEvent]] = {}  # coalesce key -> its queued cell
        self._ready = asyncio.Event()
        self._closed = False

    def __len__(self) -> int:
        return len(self._items)

    @property
    def closed(self) -> bool:
        return self._closed

    def put(self, event: BridgeEvent) -> bool:
        """Enqueue (never blocks). False when the event was dropped or the queue is closed."""
        if self._closed:
            return False
        key = _coalesce_key(event)
        cell = self._cells.get(key) if key is not None else None
        if cell is not None:
            cell[0] = event  # newer snapshot, same position: order is kept
            self.metrics.coalesced += 1
            return True
        if len(self._items) >= self.soft_bound and not self._evict_started() and not is_terminal(event):
            if _evictable(event):
                self.metrics.drop(DROPPED_STARTED)
                return False
            if isinstance(event, ReactionEvent):
                self.metrics.drop(DROPPED_REACTION)
                return False
            if isinstance(event, SummaryUpdate):
                self.metrics.drop(DROPPED_SUMMARY)
                return False
            if isinstance(event, TypingEvent):
                self.metrics.drop(DROPPED_TYPING)
                return False
        if len(self._items) >= self.soft_bound:
            self.metrics.over_soft_bound += 1
        new_cell = [event]
        self._items.append(new_cell)
        if key is not None:
            self._cells[key] = new_cell
        elif isinstance(event, TurnStart | TurnEnd):
            self._cells.clear()  # a turn boundary: nothing queued before it coalesces with what follows
        self.metrics.enqueued += 1
        self.metrics.max_depth = max(self.metrics.max_depth, len(self._items))
        self._ready.set()
        return True

    def _evict_started(self) -> bool:
        for i, item in enumerate(self._items):
            if _evictable(item[0]):
                del self._items[i]
                self._forget(item)
                self.metrics.drop(EVICTED_STARTED)
                return True
        return False

    def _forget(self, cell: list[BridgeEvent]) -> None:
        key = _coalesce_key(cell[0])
        if key is not None and self._cells.get(key) is cell:
            del self._cells[key]

    def get_nowait(self) -> BridgeEvent | None:
        if not self._items:
            if not self._closed:
                self._ready.clear()
            return None
        cell = self._items.popleft()
        self._forget(cell)
        self.metrics.delivered += 1
        return cell[0]

    async def get(self, max_wait: float | None = None) -> BridgeEvent | None:
        """Next event; ``None`` after ``max_wait`` seconds. Raises :class:`QueueClosed` when drained."""
        while True:
            item = self.get_nowait()
            if item is not None:
                return item
            if self._closed:
                raise QueueClosed
            if max_wait is not None and max_wait <= 0:
                return None
            try:
                await asyncio.wait_for(self._ready.wait(), max_wait)
            except TimeoutError:
                return None

    def close(self) -> None:
        """No more puts; ``get`` drains what is queued, then raises :class:`QueueClosed`."""
        self._closed = True
        self._ready.set()
