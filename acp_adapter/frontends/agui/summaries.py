"""PROGRESS_SUMMARY activity snapshots: each AG-UI run's progress summary, replaced in place.

Why an observer: the summary capability (:mod:`acp_adapter.summary`) watches the same ACP update
stream the projection turns into AG-UI events, so it attaches where other projections of a run
attach — a :class:`~.observers.RunObserver` — and publishes through the run's
:class:`~.run.RunEmitter`, under the run lock. That lock is what makes "nothing after the end"
hold: a revision that races the terminal event is either queued before it or dropped. On top of
that, the observer stops its capability in ``on_end`` (which runs before the terminal event is
written), so no generation is even left running once the turn is over.

Wire shape (one run)::

    ACTIVITY_SNAPSHOT  messageId "{runId}:progress-summary"  activityType "PROGRESS_SUMMARY"
                       content {"summary": "...", "revision": 3, "id"?: "..."}  replace true

One ``messageId`` per run, so a client keeps one activity message and each higher ``revision``
replaces it. Every string passes the canonical redactor here, and again in the projection.

Whether a run publishes: the endpoint default (``AguiOptions(summary=...)``: a factory or settings
whose mode is on) unless the run's ``forwardedProps.emitProgressSummary`` says otherwise. An
endpoint with summaries off still honours ``emitProgressSummary: true`` with the offline
embedded writer, the way ``emitToolProgress: true`` works on an endpoint with tool progress off.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from acp_adapter.config import Settings
from acp_adapter.frontends.agui.observers import (
    RunContext,
    RunObserver,
    RunObserverFactory,
    RunOutcome,
    RunStatus,
)
from acp_adapter.safety.redact import redact_text
from acp_adapter.summary import Clock, EmbeddedGenerator, Outcome, SummaryEvent, SummaryFactory

log = logging.getLogger("acp_progress.agui.summaries")

PROGRESS_SUMMARY_ACTIVITY: Final = "PROGRESS_SUMMARY"

_OUTCOMES: Final[Mapping[RunStatus, Outcome]] = {
    "success": "finished",
    "cancelled": "cancelled",
    "error": "failed",
}


def summary_message_id(run_id: str) -> str:
    """One activity id per run, so each revision replaces the previous one in the client."""
    return f"{run_id}:progress-summary"


def summary_content(event: SummaryEvent) -> dict[str, Any]:
    """The activity content of one revision: ``{summary, revision, id?}``, redacted."""
    content: dict[str, Any] = {"summary": redact_text(event.summary), "revision": event.revision}
    if event.id is not None:
        content["id"] = redact_text(event.id)
    return content


@dataclass(frozen=True)
class SummarySetup:
    """How an endpoint makes summaries: the factory, whether runs publish by default, who closes it."""

    factory: SummaryFactory
    default: bool
    """Runs publish summaries unless ``forwardedProps.emitProgressSummary`` is false."""
    owned: bool = True
    """Built by the endpoint from settings (closed with it), not handed in by the embedder."""
    clock: Clock | None = None
    """The summaries' clock (``None``: the event loop's); tests pass a manual one."""

    async def aclose(self) -> None:
        if self.owned:
            await self.factory.aclose()


def summary_setup(summary: SummaryFactory | Settings | SummarySetup | None) -> SummarySetup:
    """The endpoint's setup from ``AguiOptions(summary=...)``; a bad configuration raises here.

    A factory is used as given (runs publish by default). Settings are resolved with this
    front-end's default (``ACP_PROGRESS_SUMMARY=auto`` means embedded); when they resolve to off,
    runs publish only on request, with the embedded writer and the settings' interval and length.
    ``None`` is off by default, opt-in per run with the embedded writer.
    """
    if isinstance(summary, SummarySetup):
        return summary
    if isinstance(summary, SummaryFactory):
        return SummarySetup(summary, default=True, owned=False)
    if isinstance(summary, Settings):
        factory = SummaryFactory.from_settings(summary, default_mode="embedded")
        if factory is not None:
            return SummarySetup(factory, default=True)
        fallback = SummaryFactory.from_settings(summary.replace(summary="embedded"))
        assert fallback is not None  # embedded is never off
        return SummarySetup(fallback, default=False)
    if summary is None:
        return SummarySetup(SummaryFactory(EmbeddedGenerator()), default=False)
    raise TypeError(f"summary: expected a SummaryFactory, Settings or None, got {type(summary).__name__}")


class SummaryObserver(RunObserver):
    """One run's progress summary, published as ``PROGRESS_SUMMARY`` activity snapshots."""

    def __init__(self, context: RunContext, factory: SummaryFactory, *, clock: Clock | None = None) -> None:
        self.context = context
        self.message_id = summary_message_id(context.run_id)
        self.published = 0
        self.summary = factory.create(
            user_text=context.prompt,
            on_summary=self._publish,
            input=context.input,
            messages=context.input.messages,
            clock=clock,
        ).start()

    def observe(self, update: Any) -> None:
        self.summary.observe(update)

    def on_end(self, outcome: RunOutcome) -> None:
        # Before the terminal event: once stop() returned, the capability emits nothing more.
        self.summary.stop(_OUTCOMES.get(outcome.status, "failed"))

    def _publish(self, event: SummaryEvent) -> None:
        emitter = self.context.emitter
        if emitter.emit_activity(
            self.message_id, PROGRESS_SUMMARY_ACTIVITY, summary_content(event), replace=True
        ):
            self.published += 1
        else:
            log.debug("summary revision %d not published: the run is closed", event.revision)


def summary_observers(setup: SummarySetup) -> RunObserverFactory:
    """The ``run_observers`` factory that gives each publishing run its :class:`SummaryObserver`."""

    def for_run(context: RunContext) -> RunObserver | None:
        if not context.progress_summary:
            return None
        return SummaryObserver(context, setup.factory, clock=setup.clock)

    return for_run
