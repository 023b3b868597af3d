"""What a summary hands its surface: each new sentence as a revision, and its trace events.

Why apart from the scheduling and the model call: this is the one place that decides whether a
generator's answer is news (cleaned, not empty, not the sentence already shown) and the one place
that calls the surface's callbacks, so a surface that raises is contained here once — a failing
hook never breaks the turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from acp_adapter.summary.clean import clean_summary
from acp_adapter.summary.event import TRACE_EMIT, SummaryCallback, SummaryEvent, TraceCallback
from acp_adapter.summary.stats import SummaryStats

log = logging.getLogger("acp_progress.summary")


class SummaryOutput:
    """The current sentence of one turn (:attr:`latest`) and the callbacks that show it.

    ``elapsed`` tells the seconds since the turn's clock started (for the emit trace)."""

    def __init__(
        self,
        *,
        id: str | None,
        max_length: int,
        stats: SummaryStats,
        elapsed: Callable[[], float],
        on_summary: SummaryCallback | None = None,
        on_trace: TraceCallback | None = None,
    ) -> None:
        self.id = id
        self.max_length = max_length
        self.on_summary = on_summary
        self.on_trace = on_trace
        self._stats = stats
        self._elapsed = elapsed
        self._revision = 0
        #: the last revision shown, or None before the first
        self.latest: SummaryEvent | None = None

    def offer(self, raw: Any) -> None:
        """A generator's answer: shown as the next revision unless it is empty or unchanged."""
        text = clean_summary(raw, self.max_length)
        if not text:
            self._stats.empty += 1
        elif self.latest is not None and text == self.latest.summary:
            self._stats.suppressed += 1
        else:
            self._emit(text)

    def _emit(self, text: str) -> None:
        self._revision += 1
        event = SummaryEvent(text, self._revision, self.id)
        self.latest = event
        self._stats.emitted += 1
        self.trace(TRACE_EMIT, {"revision": event.revision, "elapsedMs": round(self._elapsed() * 1000)})
        if self.on_summary is not None:
            try:
                self.on_summary(event)
            except Exception:
                log.warning(
                    "a progress summary surface failed to show revision %d", event.revision, exc_info=True
                )

    def trace(self, name: str, attrs: Mapping[str, Any]) -> None:
        """A trace event: a debug record on the summary logger, then ``on_trace``."""
        log.debug("trace %s %s", name, dict(attrs), extra={"trace": name, "trace_attrs": dict(attrs)})
        self.call_trace(name, attrs)

    def call_trace(self, name: str, attrs: Mapping[str, Any]) -> None:
        """``on_trace`` only (for an event the caller has logged in its own words)."""
        if self.on_trace is None:
            return
        try:
            self.on_trace(name, dict(attrs))
        except Exception:
            log.warning("a progress summary trace callback failed on %s", name, exc_info=True)
