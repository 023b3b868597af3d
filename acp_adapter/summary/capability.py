"""``ProgressSummary``: the per-turn capability that schedules generations and emits revisions.

It sits beside the primary stream, never in it: ``observe(update)`` folds an update into the
snapshot and at most *starts* a generation task — O(1), no awaiting — so the primary stream is
never delayed by a summary. Everything else happens on the event loop's timers and tasks:

* cadence (``interval > 0``): the first stream chunk starts a generation at once and anchors a
  fixed cadence (anchor + k·interval, no drift). At most one generation runs at a time; a tick that
  finds one pending is skipped. An unchanged result is not emitted.
  Activity (a tool card starting or ending, reasoning starting) does not wait for the next tick:
  the sentence would describe work that is over ("Thinking about …" while a tool's bar moves), so
  it starts a generation at once — at most one every :data:`ACTIVITY_MIN_GAP` seconds, the rest
  folded into one follow-up — and the cadence counts again from it (the next tick is a whole
  interval later), so revisions come when the work changes, not on top of the ticks.
* event-driven (``interval == 0``): the first non-terminal chunk starts the first generation; later
  ones only when reasoning or tool events add activity. Activity during a generation schedules
  exactly one follow-up after it settles. A stream of only terminal updates, or one that fails
  before any work, starts nothing.
* ``stop(outcome)`` (turn finished, cancelled or failed) cancels the cadence and every in-flight
  generation; a result that arrives later is dropped, so nothing is emitted after the end.
* a generator that raises or hangs (``timeout``) never touches the primary stream: an
  ``agent.progress-summary.error`` trace event goes to ``on_trace`` for every failure, and the
  ``acp_progress.summary`` log gets one warning (without the error's message, with its reason
  class) per failure streak (:class:`~.streak.FailureStreak`, shared by a factory's turns); the
  rest of the streak is logged at debug level.

All state is touched on the event loop thread only (``observe`` from another thread is handed
over with ``call_soon_threadsafe``), so there is no lock. Time comes from a :class:`~.clock.Clock`
(the loop's by default; tests pass a :class:`~.clock.ManualClock`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast, get_args

from acp_adapter.summary.clean import clean_summary
from acp_adapter.summary.clock import Clock, LoopClock, Timer
from acp_adapter.summary.event import (
    TRACE_ABORT,
    TRACE_EMIT,
    TRACE_ERROR,
    Outcome,
    SummaryCallback,
    SummaryEvent,
    TraceCallback,
)
from acp_adapter.summary.generators import (
    EmbeddedGenerator,
    ExecuteFunction,
    ExecuteGenerator,
    GeneratorBusy,
    ModelGenerator,
    SummaryGenerator,
    SummaryRequest,
)
from acp_adapter.summary.prompt import PromptBuilder
from acp_adapter.summary.snapshot import ACTIVITY, CHUNK, LIVE, ProgressSnapshot, SnapshotTracker
from acp_adapter.summary.streak import FailureStreak, failure_class
from acp_adapter.summary.templates import PromptTemplate

log = logging.getLogger("acp_progress.summary")

DEFAULT_INTERVAL = 10.0
#: Cadence mode: the shortest time between two generations that new activity starts early.
ACTIVITY_MIN_GAP = 2.0
DEFAULT_MAX_LENGTH = 180
DEFAULT_TIMEOUT = 20.0
_OUTCOMES = frozenset(get_args(Outcome))


@dataclass
class SummaryStats:
    """Counters of one capability (tests and the benchmark read them)."""

    generations: int = 0  # generator calls started
    emitted: int = 0  # new revisions
    suppressed: int = 0  # results equal to the current summary
    empty: int = 0  # results with no text
    skipped_ticks: int = 0  # cadence ticks that found a generation pending
    errors: int = 0  # raised, refused template, or timed out
    timeouts: int = 0
    aborted: int = 0  # in flight when the turn ended
    dropped: int = 0  # results that arrived after they stopped mattering


def _as_generator(generator: SummaryGenerator | ExecuteFunction) -> SummaryGenerator:
    if isinstance(generator, ExecuteGenerator | EmbeddedGenerator | ModelGenerator) or hasattr(
        generator, "generate"
    ):
        return cast(SummaryGenerator, generator)
    return ExecuteGenerator(cast(ExecuteFunction, generator))


def _consume(task: asyncio.Task[None]) -> None:
    """Retrieve a finished task's exception so asyncio never logs it (it was handled inside)."""
    if not task.cancelled():
        task.exception()


class ProgressSummary:
    """A replaceable one-sentence status for one turn, written by ``generator``.

    ``generator`` is a :class:`~.generators.SummaryGenerator` or a plain ``execute`` function
    (sync or async, returning a string or ``{"summary": ...}``). ``on_summary`` gets each new
    :class:`~.event.SummaryEvent`; ``on_trace(name, attrs)`` gets trace events. Both are called
    on the event loop thread; an exception in them is logged and contained.
    """

    def __init__(
        self,
        generator: SummaryGenerator | ExecuteFunction,
        *,
        user_text: str = "",
        interval: float = DEFAULT_INTERVAL,
        max_length: int = DEFAULT_MAX_LENGTH,
        guidance: str | None = None,
        template: PromptTemplate | None = None,
        variables: Mapping[str, Any] | None = None,
        id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        on_summary: SummaryCallback | None = None,
        on_trace: TraceCallback | None = None,
        clock: Clock | None = None,
        input: Any = None,
        messages: Sequence[Any] = (),
        prompt_builder: PromptBuilder | None = None,
        streak: FailureStreak | None = None,
    ) -> None:
        if not (isinstance(interval, int | float) and math.isfinite(interval) and interval >= 0):
            raise ValueError(f"summary interval: expected 0 (event-driven) or seconds > 0, got {interval!r}")
        if not (isinstance(max_length, int) and max_length >= 1):
            raise ValueError(f"summary max_length: expected a whole number >= 1, got {max_length!r}")
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"summary timeout: expected seconds > 0, got {timeout!r}")
        self.generator = _as_generator(generator)
        self.interval = float(interval)
        self.max_length = max_length
        self.timeout = float(timeout)
        self.id = id
        self.on_summary = on_summary
        self.on_trace = on_trace
        self.input = input
        self.messages = messages
        self.stats = SummaryStats()
        self.streak = streak if streak is not None else FailureStreak()
        if prompt_builder is not None and (guidance or template is not None or variables):
            raise ValueError("pass either prompt_builder or guidance/template/variables, not both")
        self._prompt = prompt_builder or PromptBuilder(
            max_length=max_length, guidance=guidance, template=template, variables=variables
        )
        self._tracker = SnapshotTracker(user_text)
        self._clock: Clock | None = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._t0 = 0.0
        self._anchor = 0.0
        self._ticks = 0
        self._tick_timer: Timer | None = None
        self._timeout_timer: Timer | None = None
        self._task: asyncio.Task[None] | None = None
        self._gen_seq = 0
        self._gen_activity = 0
        self._gen_started = -math.inf  # when the last generation started (the clock's time)
        self._catch_up_timer: Timer | None = None
        self._aborted: set[asyncio.Task[None]] = set()
        self._started = False
        self._running = False
        self._stopped = False
        self.outcome: Outcome | None = None
        self._revision = 0
        self.latest: SummaryEvent | None = None

    # ------------------------------------------------------------ lifecycle

    @property
    def running(self) -> bool:
        """Generation has begun (the first qualifying chunk arrived) and the turn has not ended."""
        return self._running and not self._stopped

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def generating(self) -> bool:
        """A generation is in flight."""
        return self._task is not None

    def start(self) -> ProgressSummary:
        """Bind to the running event loop and start the turn's clock. Idempotent; ``observe``
        calls it on first use. Generation itself begins with the first stream chunk."""
        if self._started:
            return self
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        if self._clock is None:
            self._clock = LoopClock(self._loop)
        self._t0 = self._clock.now()
        self._started = True
        return self

    def stop(self, outcome: Outcome = "finished") -> None:
        """The turn ended: stop the cadence, abort any generation in flight, drop late results.

        Idempotent. Call it on the event loop thread before the surface's last write of the turn:
        once it returned, ``on_summary`` is never called again."""
        if outcome not in _OUTCOMES:
            raise ValueError(f"summary stop: outcome must be one of {sorted(_OUTCOMES)}, got {outcome!r}")
        if self._stopped:
            return
        self._stopped = True
        self.outcome = outcome
        for timer in (self._tick_timer, self._timeout_timer, self._catch_up_timer):
            if timer is not None:
                timer.cancel()
        self._tick_timer = self._timeout_timer = self._catch_up_timer = None
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            self._aborted.add(task)
            task.add_done_callback(self._aborted.discard)
            self.stats.aborted += 1
            self._trace(TRACE_ABORT, {"outcome": outcome, "generation": self._gen_seq})
        log.debug("progress summary stopped (%s) after %d generation(s)", outcome, self.stats.generations)

    async def aclose(self, outcome: Outcome = "finished") -> None:
        """:meth:`stop`, then wait (briefly) until aborted generations have unwound."""
        self.stop(outcome)
        if self._aborted:
            await asyncio.wait(set(self._aborted), timeout=1.0)

    async def __aenter__(self) -> ProgressSummary:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            outcome: Outcome = "finished"
        elif isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
            outcome = "cancelled"
        else:
            outcome = "failed"
        await asyncio.shield(self.aclose(outcome))

    # ------------------------------------------------------------ the primary stream

    def observe(self, update: Any) -> None:
        """Fold one ``SessionUpdate`` of the primary stream in. O(1); never awaits the generator.

        Call it with every update the client sees, in order. From another thread it is handed to
        the loop thread (after :meth:`start`)."""
        if self._stopped:
            return
        if not self._started:
            self.start()
        if self._thread != threading.get_ident():
            assert self._loop is not None
            with contextlib.suppress(RuntimeError):  # a closed loop: the turn is over
                self._loop.call_soon_threadsafe(self.observe, update)
            return
        bits = self._tracker.observe(update)
        if not bits & CHUNK:
            return
        if not self._running:
            if self.interval > 0 or bits & LIVE:
                self._begin()
        elif self.interval == 0 and bits & ACTIVITY and self._task is None:
            self._generate()
        elif self.interval > 0 and bits & ACTIVITY:
            self._catch_up()

    def _catch_up(self) -> None:
        """Cadence mode, new activity: revise the sentence now rather than at the next tick (once a
        running generation settles, or :data:`ACTIVITY_MIN_GAP` after the last one began)."""
        if self._task is not None or self._catch_up_timer is not None:
            return  # a follow-up comes when the running generation settles (or is already due)
        wait = self._gen_started + ACTIVITY_MIN_GAP - self._now()
        if wait <= 0:
            self._restart_cadence()
            return
        assert self._clock is not None

        def due() -> None:
            self._catch_up_timer = None
            if not self._stopped and self._task is None and self._tracker.activity > self._gen_activity:
                self._restart_cadence()

        self._catch_up_timer = self._clock.call_later(wait, due)

    def _restart_cadence(self) -> None:
        """Generate now and count the cadence from now: the sentence is fresh, so the next tick is a
        whole interval away (early revisions replace ticks rather than adding to them)."""
        if self._tick_timer is not None:
            self._tick_timer.cancel()
        self._anchor = self._now()
        self._ticks = 0
        self._tick()

    def snapshot(self) -> ProgressSnapshot:
        """The facts a generation started now would get."""
        return self._tracker.snapshot(self._elapsed(), self.latest.summary if self.latest else None)

    # ------------------------------------------------------------ scheduling

    def _now(self) -> float:
        assert self._clock is not None
        return self._clock.now()

    def _elapsed(self) -> float:
        return self._now() - self._t0 if self._started else 0.0

    def _begin(self) -> None:
        self._running = True
        self._anchor = self._now()
        if self.interval > 0:
            self._tick()
        else:
            self._generate()

    def _tick(self) -> None:
        self._tick_timer = None
        if self._stopped:
            return
        if self._task is not None:
            self.stats.skipped_ticks += 1
        else:
            self._generate()
        now = self._now()
        self._ticks += 1
        due = self._anchor + self._ticks * self.interval
        if due <= now:  # the loop was blocked past whole ticks: skip them, keep the cadence's phase
            self._ticks = math.floor((now - self._anchor) / self.interval) + 1
            due = self._anchor + self._ticks * self.interval
        assert self._clock is not None
        self._tick_timer = self._clock.call_later(due - now, self._tick)

    def _generate(self) -> None:
        assert self._loop is not None and self._clock is not None
        self._gen_seq += 1
        seq = self._gen_seq
        self._gen_activity = self._tracker.activity
        self._gen_started = self._now()
        self.stats.generations += 1
        snapshot = self.snapshot()
        task = self._loop.create_task(self._run(seq, snapshot), name=f"acp-progress-summary-{seq}")
        task.add_done_callback(_consume)
        self._task = task
        self._timeout_timer = self._clock.call_later(self.timeout, lambda: self._on_timeout(seq))

    def _current(self, seq: int) -> bool:
        return not self._stopped and self._task is not None and seq == self._gen_seq

    async def _run(self, seq: int, snapshot: ProgressSnapshot) -> None:
        try:
            built = self._prompt.build(snapshot, input=self.input, messages=self.messages)
        except Exception as exc:
            self._failed(seq, "template", exc)
            return
        request = SummaryRequest(
            snapshot=snapshot,
            prompt=built.prompt,
            prompt_messages=built.messages,
            max_length=self.max_length,
            input=self.input,
            messages=self.messages,
        )
        try:
            raw = await self.generator.generate(request)
        except asyncio.CancelledError:
            raise
        except GeneratorBusy:  # an earlier generation still holds every summary thread: skip
            if self._current(seq):
                self.stats.skipped_ticks += 1
                self._task = None
                if self._timeout_timer is not None:
                    self._timeout_timer.cancel()
                    self._timeout_timer = None
            return
        except Exception as exc:
            self._failed(seq, "error", exc)
            return
        self._settle(seq, raw)

    def _settle(self, seq: int, raw: Any) -> None:
        if not self._current(seq):
            self.stats.dropped += 1
            return
        ended = self.streak.succeeded()
        if ended:
            log.info("progress summaries work again after %d failed generation(s)", ended)
        text = clean_summary(raw, self.max_length)
        if not text:
            self.stats.empty += 1
        elif self.latest is not None and text == self.latest.summary:
            self.stats.suppressed += 1
        else:
            self._emit(text)
        self._finish_generation()

    def _emit(self, text: str) -> None:
        self._revision += 1
        event = SummaryEvent(text, self._revision, self.id)
        self.latest = event
        self.stats.emitted += 1
        self._trace(TRACE_EMIT, {"revision": event.revision, "elapsedMs": round(self._elapsed() * 1000)})
        if self.on_summary is not None:
            try:
                self.on_summary(event)
            except Exception:
                log.warning(
                    "a progress summary surface failed to show revision %d", event.revision, exc_info=True
                )

    def _failed(self, seq: int, reason: str, exc: BaseException) -> None:
        if not self._current(seq):
            self.stats.dropped += 1
            return
        self.stats.errors += 1
        # Never the exception's message: it may quote a key, a URL or the prompt.
        self._error(reason, type(exc).__name__, seq, exc)
        self._finish_generation()

    def _on_timeout(self, seq: int) -> None:
        if not self._current(seq):
            return
        task = self._task
        assert task is not None
        self.stats.errors += 1
        self.stats.timeouts += 1
        self._timeout_timer = None
        task.cancel()
        self._error("timeout", None, seq)
        self._finish_generation()

    def _error(self, reason: str, error_type: str | None, seq: int, exc: BaseException | None = None) -> None:
        attrs: dict[str, Any] = {"reason": reason, "generation": seq}
        if error_type is not None:
            attrs["errorType"] = error_type
        kind = failure_class(reason, exc)
        detail = f" after {self.timeout:g}s" if reason == "timeout" else ""
        if error_type and kind != error_type:
            detail = f", {error_type}"
        first = self.streak.failed()
        log.log(
            logging.WARNING if first else logging.DEBUG,
            "progress summary generation %d failed (%s%s); the turn goes on without it%s",
            seq,
            kind,
            detail,
            "; further failures are not reported until a summary succeeds" if first else "",
            extra={"trace": TRACE_ERROR, "trace_attrs": attrs},
        )
        self._call_trace(TRACE_ERROR, attrs)

    def _finish_generation(self) -> None:
        self._task = None
        if self._timeout_timer is not None:
            self._timeout_timer.cancel()
            self._timeout_timer = None
        if not self._stopped and self._tracker.activity > self._gen_activity:
            if self.interval == 0:
                self._generate()  # activity arrived meanwhile: exactly one follow-up
            else:
                self._catch_up()

    # ------------------------------------------------------------ traces

    def _trace(self, name: str, attrs: Mapping[str, Any]) -> None:
        log.debug("trace %s %s", name, dict(attrs), extra={"trace": name, "trace_attrs": dict(attrs)})
        self._call_trace(name, attrs)

    def _call_trace(self, name: str, attrs: Mapping[str, Any]) -> None:
        if self.on_trace is None:
            return
        try:
            self.on_trace(name, dict(attrs))
        except Exception:
            log.warning("a progress summary trace callback failed on %s", name, exc_info=True)
