"""When a turn's summary generations start: a fixed cadence, or the turn's events.

Why apart from the generation itself: the throttle is the part that keeps a summary from costing
more than it tells — at most one generation at a time, none for a stream of only terminal updates,
revisions when the work changes rather than on top of the ticks — and it is tested on a fake clock
without any model in the way.

* cadence (``interval > 0``): the first stream chunk starts a generation at once and anchors a
  fixed cadence (anchor + k·interval, no drift). At most one generation runs at a time; a tick that
  finds one pending is skipped. Activity (a tool card starting or ending, reasoning starting) does
  not wait for the next tick: the sentence would describe work that is over ("Thinking about …"
  while a tool's bar moves), so it starts a generation at once — at most one every
  :data:`ACTIVITY_MIN_GAP` seconds, the rest folded into one follow-up — and the cadence counts
  again from it (the next tick is a whole interval later), so revisions come when the work
  changes, not on top of the ticks.
* event-driven (``interval == 0``): the first non-terminal chunk starts the first generation; later
  ones only when reasoning or tool events add activity. Activity during a generation schedules
  exactly one follow-up after it settles. A stream of only terminal updates, or one that fails
  before any work, starts nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from acp_adapter.summary.clock import Clock, Timer
from acp_adapter.summary.generation import Generations
from acp_adapter.summary.snapshot import ACTIVITY, LIVE, ProgressSnapshot, SnapshotTracker
from acp_adapter.summary.stats import SummaryStats

#: Cadence mode: the shortest time between two generations that new activity starts early.
ACTIVITY_MIN_GAP = 2.0


class SummarySchedule:
    """Starts ``generations`` for one turn on ``clock``, from the chunks :meth:`on_chunk` is told
    about; ``snapshot`` gives the facts a generation started now would get."""

    def __init__(
        self,
        *,
        interval: float,
        clock: Clock,
        generations: Generations,
        tracker: SnapshotTracker,
        snapshot: Callable[[], ProgressSnapshot],
        stats: SummaryStats,
    ) -> None:
        self._interval = interval
        self._clock = clock
        self._generations = generations
        self._tracker = tracker
        self._snapshot = snapshot
        self._stats = stats
        self._anchor = 0.0
        self._ticks = 0
        self._tick_timer: Timer | None = None
        self._catch_up_timer: Timer | None = None
        self._running = False
        self._stopped = False

    @property
    def running(self) -> bool:
        """Generation has begun (the first qualifying chunk arrived)."""
        return self._running

    def on_chunk(self, bits: int) -> None:
        """A stream chunk arrived (``bits``: what the snapshot tracker saw in it)."""
        if not self._running:
            if self._interval > 0 or bits & LIVE:
                self._begin()
        elif self._interval == 0 and bits & ACTIVITY and not self._generations.busy:
            self._generate()
        elif self._interval > 0 and bits & ACTIVITY:
            self._catch_up()

    def after_generation(self) -> None:
        """A generation settled: activity that arrived meanwhile gets exactly one follow-up."""
        if not self._stopped and self._tracker.activity > self._generations.activity:
            if self._interval == 0:
                self._generate()
            else:
                self._catch_up()

    def stop(self) -> None:
        """The turn ended: no tick or follow-up fires any more."""
        self._stopped = True
        for timer in (self._tick_timer, self._catch_up_timer):
            if timer is not None:
                timer.cancel()
        self._tick_timer = self._catch_up_timer = None

    def _begin(self) -> None:
        self._running = True
        self._anchor = self._clock.now()
        if self._interval > 0:
            self._tick()
        else:
            self._generate()

    def _generate(self) -> None:
        self._generations.start(self._snapshot(), self._tracker.activity)

    def _tick(self) -> None:
        self._tick_timer = None
        if self._stopped:
            return
        if self._generations.busy:
            self._stats.skipped_ticks += 1
        else:
            self._generate()
        now = self._clock.now()
        self._ticks += 1
        due = self._anchor + self._ticks * self._interval
        if due <= now:  # the loop was blocked past whole ticks: skip them, keep the cadence's phase
            self._ticks = math.floor((now - self._anchor) / self._interval) + 1
            due = self._anchor + self._ticks * self._interval
        self._tick_timer = self._clock.call_later(due - now, self._tick)

    def _catch_up(self) -> None:
        """Cadence mode, new activity: revise the sentence now rather than at the next tick (once a
        running generation settles, or :data:`ACTIVITY_MIN_GAP` after the last one began)."""
        if self._generations.busy or self._catch_up_timer is not None:
            return  # a follow-up comes when the running generation settles (or is already due)
        wait = self._generations.started_at + ACTIVITY_MIN_GAP - self._clock.now()
        if wait <= 0:
            self._restart_cadence()
            return

        def due() -> None:
            self._catch_up_timer = None
            if (
                not self._stopped
                and not self._generations.busy
                and self._tracker.activity > self._generations.activity
            ):
                self._restart_cadence()

        self._catch_up_timer = self._clock.call_later(wait, due)

    def _restart_cadence(self) -> None:
        """Generate now and count the cadence from now: the sentence is fresh, so the next tick is a
        whole interval away (early revisions replace ticks rather than adding to them)."""
        if self._tick_timer is not None:
            self._tick_timer.cancel()
        self._anchor = self._clock.now()
        self._ticks = 0
        self._tick()
