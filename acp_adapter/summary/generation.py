"""One summary generation at a time: the model call, bounded by a timeout, its failures contained.

Why apart from the scheduling: *when* a generation starts is the schedule's business; this module
owns *one* generation from its start to its end — the prompt built from a snapshot, the
generator's call, the timeout that cancels it, and what becomes of its answer (handed to the
:class:`~.output.SummaryOutput`) or its failure. A generator that raises or hangs never touches the
primary stream: an ``agent.progress-summary.error`` trace event goes to ``on_trace`` for every
failure, and the ``acp_progress.summary`` log gets one warning (without the error's message, with
its reason class) per failure streak (:class:`~.streak.FailureStreak`, shared by a factory's
turns); the rest of the streak is logged at debug level. An answer that arrives after the turn
ended, or after its generation timed out, is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from acp_adapter.summary.clock import Clock, Timer
from acp_adapter.summary.event import TRACE_ABORT, TRACE_ERROR, Outcome
from acp_adapter.summary.generators import GeneratorBusy, SummaryGenerator, SummaryRequest
from acp_adapter.summary.output import SummaryOutput
from acp_adapter.summary.prompt import PromptBuilder
from acp_adapter.summary.snapshot import ProgressSnapshot
from acp_adapter.summary.stats import SummaryStats
from acp_adapter.summary.streak import FailureStreak, failure_class

log = logging.getLogger("acp_progress.summary")


def _consume(task: asyncio.Task[None]) -> None:
    """Retrieve a finished task's exception so asyncio never logs it (it was handled inside)."""
    if not task.cancelled():
        task.exception()


@dataclass(frozen=True)
class RequestMaker:
    """What every generation of a turn asks its generator: the prompt built from the snapshot
    (raises when a template refuses), the length bound, and the run's input and messages."""

    prompt: PromptBuilder
    max_length: int
    input: Any = None
    messages: Sequence[Any] = ()

    def request(self, snapshot: ProgressSnapshot) -> SummaryRequest:
        built = self.prompt.build(snapshot, input=self.input, messages=self.messages)
        return SummaryRequest(
            snapshot=snapshot,
            prompt=built.prompt,
            prompt_messages=built.messages,
            max_length=self.max_length,
            input=self.input,
            messages=self.messages,
        )


class Generations:
    """Runs a turn's generations, one at a time, on ``loop``; ``on_settled`` is called when one
    ends with an answer, an error or a timeout (not when it is aborted or the generator is busy),
    so the schedule can decide on a follow-up."""

    def __init__(
        self,
        generator: SummaryGenerator,
        *,
        requests: RequestMaker,
        output: SummaryOutput,
        stats: SummaryStats,
        streak: FailureStreak,
        loop: asyncio.AbstractEventLoop,
        clock: Clock,
        timeout: float,
    ) -> None:
        self._generator = generator
        self._requests = requests
        self._output = output
        self._stats = stats
        self._streak = streak
        self._loop = loop
        self._clock = clock
        self._timeout = timeout
        #: called when a generation settled (the schedule's follow-up decision)
        self.on_settled: Callable[[], None] = lambda: None
        self._task: asyncio.Task[None] | None = None
        self._timeout_timer: Timer | None = None
        self._seq = 0
        #: the snapshot's activity count when the last generation started
        self.activity = 0
        #: when the last generation started (the clock's time)
        self.started_at = -math.inf
        self._aborted: set[asyncio.Task[None]] = set()
        self._stopped = False

    @property
    def busy(self) -> bool:
        """A generation is in flight."""
        return self._task is not None

    def start(self, snapshot: ProgressSnapshot, activity: int) -> None:
        """Start a generation for ``snapshot`` (taken when the activity count was ``activity``)."""
        self._seq += 1
        seq = self._seq
        self.activity = activity
        self.started_at = self._clock.now()
        self._stats.generations += 1
        task = self._loop.create_task(self._run(seq, snapshot), name=f"acp-progress-summary-{seq}")
        task.add_done_callback(_consume)
        self._task = task
        self._timeout_timer = self._clock.call_later(self._timeout, lambda: self._on_timeout(seq))

    def abort(self, outcome: Outcome) -> None:
        """The turn ended: cancel the generation in flight; any later result is dropped."""
        self._stopped = True
        if self._timeout_timer is not None:
            self._timeout_timer.cancel()
            self._timeout_timer = None
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            self._aborted.add(task)
            task.add_done_callback(self._aborted.discard)
            self._stats.aborted += 1
            self._output.trace(TRACE_ABORT, {"outcome": outcome, "generation": self._seq})

    async def unwound(self, within: float = 1.0) -> None:
        """Wait (at most ``within`` seconds) until the aborted generations have unwound."""
        if self._aborted:
            await asyncio.wait(set(self._aborted), timeout=within)

    def _current(self, seq: int) -> bool:
        return not self._stopped and self._task is not None and seq == self._seq

    async def _run(self, seq: int, snapshot: ProgressSnapshot) -> None:
        try:
            request = self._requests.request(snapshot)
        except Exception as exc:
            self._failed(seq, "template", exc)
            return
        try:
            raw = await self._generator.generate(request)
        except asyncio.CancelledError:
            raise
        except GeneratorBusy:  # an earlier generation still holds every summary thread: skip
            if self._current(seq):
                self._stats.skipped_ticks += 1
                self._task = None
                self._cancel_timeout()
            return
        except Exception as exc:
            self._failed(seq, "error", exc)
            return
        self._settle(seq, raw)

    def _settle(self, seq: int, raw: Any) -> None:
        if not self._current(seq):
            self._stats.dropped += 1
            return
        ended = self._streak.succeeded()
        if ended:
            log.info("progress summaries work again after %d failed generation(s)", ended)
        self._output.offer(raw)
        self._finish()

    def _failed(self, seq: int, reason: str, exc: BaseException) -> None:
        if not self._current(seq):
            self._stats.dropped += 1
            return
        self._stats.errors += 1
        # Never the exception's message: it may quote a key, a URL or the prompt.
        self._error(reason, type(exc).__name__, seq, exc)
        self._finish()

    def _on_timeout(self, seq: int) -> None:
        if not self._current(seq):
            return
        task = self._task
        assert task is not None
        self._stats.errors += 1
        self._stats.timeouts += 1
        self._timeout_timer = None
        task.cancel()
        self._error("timeout", None, seq)
        self._finish()

    def _error(self, reason: str, error_type: str | None, seq: int, exc: BaseException | None = None) -> None:
        attrs: dict[str, Any] = {"reason": reason, "generation": seq}
        if error_type is not None:
            attrs["errorType"] = error_type
        kind = failure_class(reason, exc)
        detail = f" after {self._timeout:g}s" if reason == "timeout" else ""
        if error_type and kind != error_type:
            detail = f", {error_type}"
        first = self._streak.failed()
        log.log(
            logging.WARNING if first else logging.DEBUG,
            "progress summary generation %d failed (%s%s); the turn goes on without it%s",
            seq,
            kind,
            detail,
            "; further failures are not reported until a summary succeeds" if first else "",
            extra={"trace": TRACE_ERROR, "trace_attrs": attrs},
        )
        self._output.call_trace(TRACE_ERROR, attrs)

    def _cancel_timeout(self) -> None:
        if self._timeout_timer is not None:
            self._timeout_timer.cancel()
            self._timeout_timer = None

    def _finish(self) -> None:
        self._task = None
        self._cancel_timeout()
        self.on_settled()
