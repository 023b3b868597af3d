"""Per-run observers: the seam where other projections of a run's ACP update stream attach.

The AG-UI endpoint projects each run's updates to AG-UI events itself; anything else that wants
to watch the same stream (a progress summary publishing a ``PROGRESS_SUMMARY`` activity, metrics,
an audit log) is a :class:`RunObserver`. ``AguiOptions(run_observers=[factory, ...])`` takes
factories; each is called once per run with that run's :class:`RunContext` and returns an
observer (or ``None`` to sit the run out). The context carries the run's
:class:`~acp_adapter.frontends.agui.run.RunEmitter`, so an observer publishes with
``context.emitter.emit_activity(...)`` under the same lock as every other event of the run —
nothing it writes can land after ``RUN_FINISHED``.

Hooks are contained (a failing hook never breaks the turn): an observer that raises is logged
and skipped, the run goes on. ``observe`` runs inline on the event loop for every update and must be quick;
``on_end`` runs after the ACP turn ended and *before* the terminal event is written, so a final
activity still reaches the client; it may return an awaitable, awaited for at most
:data:`END_HOOK_TIMEOUT` seconds.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ag_ui.core import RunAgentInput

from acp_adapter.frontends.agui.run import RunEmitter
from acp_adapter.protocol.observer import Observers
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.agui.observers")

#: Seconds an observer's asynchronous ``on_end`` may hold back the terminal event.
END_HOOK_TIMEOUT: Final = 2.0

RunStatus = Literal["success", "cancelled", "error"]


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended, as observers learn it.

    ``abandoned`` says the client disconnected first: nothing more reaches it, whatever the status.
    ``error`` is a short redacted line when the status is ``error``.
    """

    status: RunStatus
    stop_reason: str | None = None
    error: str | None = None
    abandoned: bool = False


@dataclass
class RunContext:
    """One run as observers see it. ``session_id`` is set once the run's ACP session is known."""

    thread_id: str
    run_id: str
    prompt: str
    input: RunAgentInput
    emitter: RunEmitter
    tool_progress: bool
    #: whether this run publishes PROGRESS_SUMMARY activities (endpoint default, or forwardedProps)
    progress_summary: bool = False
    session_id: str | None = None
    #: free-form per-run state for observers that cooperate (e.g. a summary and its renderer)
    extras: dict[str, Any] = field(default_factory=dict)


class RunObserver:
    """Watches one run's ACP update stream: an
    :class:`~acp_adapter.protocol.observer.UpdateObserver` (``observe``) with an end-of-run hook;
    override either (both default to nothing)."""

    def observe(self, update: Any) -> None:
        """Called for every ACP session update of the run, think cards included, in order."""

    def on_end(self, outcome: RunOutcome) -> Awaitable[None] | None:
        """Called once after the ACP turn ended, before the terminal AG-UI event is written."""
        return None


RunObserverFactory = Callable[[RunContext], RunObserver | None]


class ObserverSet:
    """The observers of one run, every hook call contained."""

    def __init__(self, observers: Iterable[RunObserver], end_timeout: float = END_HOOK_TIMEOUT) -> None:
        self._observers = list(observers)
        self._updates = Observers(self._observers, name="run observer")
        self.end_timeout = end_timeout

    @classmethod
    def build(cls, factories: Iterable[RunObserverFactory], context: RunContext) -> ObserverSet:
        observers: list[RunObserver] = []
        for factory in factories:
            try:
                observer = factory(context)
            except Exception as exc:
                log.warning("run observer factory failed; run goes on without it: %s", _why(exc))
                continue
            if observer is not None:
                observers.append(observer)
        return cls(observers)

    def __len__(self) -> int:
        return len(self._observers)

    def observe(self, update: Any) -> None:
        self._updates.observe(update)

    async def end(self, outcome: RunOutcome) -> None:
        timeout = self.end_timeout
        for observer in self._observers:
            try:
                result = observer.on_end(outcome)
                if inspect.isawaitable(result):
                    await asyncio.wait_for(_awaited(result), timeout)
            except TimeoutError:
                log.warning("run observer's on_end took longer than %gs; not waited for", timeout)
            except Exception as exc:
                log.warning("run observer failed at the end of the run; ignored: %s", _why(exc))


async def _awaited(awaitable: Awaitable[None]) -> None:
    await awaitable


def _why(exc: BaseException) -> str:
    return redact_text(f"{type(exc).__name__}: {exc}")[:300]
