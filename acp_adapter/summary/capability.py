"""``ProgressSummary``: the per-turn capability a front-end holds to get a replaceable status.

It sits beside the primary stream, never in it: ``observe(update)`` folds an update into the
snapshot and at most *starts* a generation task — O(1), no awaiting — so the primary stream is
never delayed by a summary. Everything else happens on the event loop's timers and tasks, in parts
with one job each, which this class composes and whose public face it is:

* :class:`~.schedule.SummarySchedule` decides *when* a generation starts (a fixed cadence, or the
  turn's events; activity revises early; at most one generation at a time);
* :class:`~.generation.Generations` runs *one* generation: the prompt, the generator's call under a
  timeout, its failures contained (a trace event each, one warning per failure streak);
* :class:`~.output.SummaryOutput` turns an answer into the next revision (an unchanged result is
  not emitted) and calls the surface's ``on_summary`` and ``on_trace``, each failure contained.

``stop(outcome)`` (turn finished, cancelled or failed) cancels the schedule and every in-flight
generation; a result that arrives later is dropped, so nothing is emitted after the end.

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
from types import TracebackType
from typing import Any, cast, get_args

from acp_adapter.summary.clock import Clock, LoopClock
from acp_adapter.summary.event import Outcome, SummaryCallback, SummaryEvent, TraceCallback
from acp_adapter.summary.generation import Generations, RequestMaker
from acp_adapter.summary.generators import (
    EmbeddedGenerator,
    ExecuteFunction,
    ExecuteGenerator,
    ModelGenerator,
    SummaryGenerator,
)
from acp_adapter.summary.output import SummaryOutput
from acp_adapter.summary.prompt import PromptBuilder
from acp_adapter.summary.schedule import SummarySchedule
from acp_adapter.summary.snapshot import CHUNK, ProgressSnapshot, SnapshotTracker
from acp_adapter.summary.stats import SummaryStats
from acp_adapter.summary.streak import FailureStreak
from acp_adapter.summary.templates import PromptTemplate

log = logging.getLogger("acp_progress.summary")

DEFAULT_INTERVAL = 10.0
DEFAULT_MAX_LENGTH = 180
DEFAULT_TIMEOUT = 20.0
_OUTCOMES = frozenset(get_args(Outcome))


def _as_generator(generator: SummaryGenerator | ExecuteFunction) -> SummaryGenerator:
    if isinstance(generator, ExecuteGenerator | EmbeddedGenerator | ModelGenerator) or hasattr(
        generator, "generate"
    ):
        return cast(SummaryGenerator, generator)
    return ExecuteGenerator(cast(ExecuteFunction, generator))


def _check_limits(interval: float, max_length: int, timeout: float) -> None:
    """Refuse, at once and saying which, the numbers a summary cannot run by (a NaN cadence, a
    zero timeout): they come from settings and library callers, and would fail only mid-turn."""
    if not (isinstance(interval, int | float) and math.isfinite(interval) and interval >= 0):
        raise ValueError(f"summary interval: expected 0 (event-driven) or seconds > 0, got {interval!r}")
    if not (isinstance(max_length, int) and max_length >= 1):
        raise ValueError(f"summary max_length: expected a whole number >= 1, got {max_length!r}")
    if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"summary timeout: expected seconds > 0, got {timeout!r}")


def _prompt_of(
    builder: PromptBuilder | None,
    max_length: int,
    guidance: str | None,
    template: PromptTemplate | None,
    variables: Mapping[str, Any] | None,
) -> PromptBuilder:
    """The turn's prompt builder: the one given, or one made of guidance, template and variables;
    never both, where which one wins would be a guess."""
    if builder is None:
        return PromptBuilder(max_length=max_length, guidance=guidance, template=template, variables=variables)
    if guidance or template is not None or variables:
        raise ValueError("pass either prompt_builder or guidance/template/variables, not both")
    return builder


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
        _check_limits(interval, max_length, timeout)
        self._prompt = _prompt_of(prompt_builder, max_length, guidance, template, variables)
        self.generator = _as_generator(generator)
        self.interval = float(interval)
        self.max_length = max_length
        self.timeout = float(timeout)
        self.input = input
        self.messages = messages
        self.stats = SummaryStats()
        self.streak = streak if streak is not None else FailureStreak()
        self._tracker = SnapshotTracker(user_text)
        self._output = SummaryOutput(
            id=id,
            max_length=max_length,
            stats=self.stats,
            elapsed=self._elapsed,
            on_summary=on_summary,
            on_trace=on_trace,
        )
        self._clock: Clock | None = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._t0 = 0.0
        # the schedule and its generations need the running loop: made by start()
        self._generations: Generations | None = None
        self._schedule: SummarySchedule | None = None
        self._stopped = False
        self.outcome: Outcome | None = None

    # ------------------------------------------------------------ lifecycle

    @property
    def running(self) -> bool:
        """Generation has begun (the first qualifying chunk arrived) and the turn has not ended."""
        return self._schedule is not None and self._schedule.running and not self._stopped

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def generating(self) -> bool:
        """A generation is in flight."""
        return self._generations is not None and self._generations.busy

    @property
    def latest(self) -> SummaryEvent | None:
        """The last revision emitted, or None before the first."""
        return self._output.latest

    def start(self) -> ProgressSummary:
        """Bind to the running event loop and start the turn's clock. Idempotent; ``observe``
        calls it on first use. Generation itself begins with the first stream chunk."""
        if self._schedule is not None:
            return self
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        if self._clock is None:
            self._clock = LoopClock(self._loop)
        clock = self._clock
        self._t0 = clock.now()
        generations = Generations(
            self.generator,
            requests=RequestMaker(self._prompt, self.max_length, self.input, self.messages),
            output=self._output,
            stats=self.stats,
            streak=self.streak,
            loop=self._loop,
            clock=clock,
            timeout=self.timeout,
        )
        self._schedule = SummarySchedule(
            interval=self.interval,
            clock=clock,
            generations=generations,
            tracker=self._tracker,
            snapshot=self.snapshot,
            stats=self.stats,
        )
        generations.on_settled = self._schedule.after_generation
        self._generations = generations
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
        if self._schedule is not None:
            self._schedule.stop()
        if self._generations is not None:
            self._generations.abort(outcome)
        log.debug("progress summary stopped (%s) after %d generation(s)", outcome, self.stats.generations)

    async def aclose(self, outcome: Outcome = "finished") -> None:
        """:meth:`stop`, then wait (briefly) until aborted generations have unwound."""
        self.stop(outcome)
        if self._generations is not None:
            await self._generations.unwound(within=1.0)

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
        if self._schedule is None:
            self.start()
        if self._thread != threading.get_ident():
            assert self._loop is not None
            with contextlib.suppress(RuntimeError):  # a closed loop: the turn is over
                self._loop.call_soon_threadsafe(self.observe, update)
            return
        bits = self._tracker.observe(update)
        if bits & CHUNK:
            assert self._schedule is not None
            self._schedule.on_chunk(bits)

    def snapshot(self) -> ProgressSnapshot:
        """The facts a generation started now would get."""
        latest = self._output.latest
        return self._tracker.snapshot(self._elapsed(), latest.summary if latest else None)

    def _elapsed(self) -> float:
        if self._schedule is None or self._clock is None:
            return 0.0
        return self._clock.now() - self._t0
