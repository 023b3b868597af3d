"""A turn's real tool cards, and the checks on what a tool reports as its progress.

A tool card opens only once per id and takes over from the think card still open (no orphan
spinner); once it has reached its terminal phase, nothing more of it is sent. Progress is the hot
path (a busy tool reports thousands of values a second): it is built on the event loop and
replaces this card's progress still queued, so a slow client never makes the tool wait. A card
shows two kinds of report side by side — its numbers (the bar) and a status line (a report with a
message and no numbers: an MCP task's status, a tool's "now doing X") — so the one queued slot of a
card keeps the latest of each (:class:`CardProgress`): a status line arriving before the numbers
went out does not take the bar with it, and numbers without a message do not erase the status line.

What a tool reports is checked before it is accepted: a value that JSON cannot carry is left out
with a warning, once per kind of mistake and session, and the rest of the report still goes out.

Not thread-safe on its own: :class:`~acp_adapter.agent.turn_state.SessionStream` calls it only under
its one lock and only while the turn is open (the report check runs before the lock).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from acp.schema import ToolCallProgress, ToolCallStart, ToolKind

from acp_adapter.agent.outbox import UpdateBuild
from acp_adapter.agent.turn_cards import CardLedger
from acp_adapter.agent.turn_output import TurnOutput
from acp_adapter.agent.turn_think import ThinkCards
from acp_adapter.protocol.meta import ProgressMeta
from acp_adapter.tools import (
    build_tool_complete,
    build_tool_failed,
    build_tool_progress,
    build_tool_start,
    progress_number,
)

# the turn state machine's logger: configurations that quiet or route it keep covering tool progress
log = logging.getLogger("acp_progress.turn_state")

ProgressReport = tuple[float | None, float | None, str | None]
"""A checked progress report: ``value``, ``total`` and ``message``, each left out when bad."""


class ProgressReportCheck:
    """Check what a tool reports; warn about each kind of bad input once (a loop must not flood the log)."""

    def __init__(self) -> None:
        self._warned: set[str] = set()

    def __call__(self, value: object, total: object, message: object) -> ProgressReport | None:
        """The report with its bad fields left out, or ``None`` when nothing is left to publish."""
        value, total = self._number("value", value), self._number("total", total)
        if message is not None and not isinstance(message, str):
            self._warn_once(f"the message must be text, not {type(message).__name__}; it is left out")
            message = None
        if value is None and total is None and not message:
            return None
        return value, total, message

    def _number(self, field: str, value: object) -> float | None:
        try:
            return progress_number(field, value)
        except ValueError as exc:
            self._warn_once(f"{exc}; the field is left out")
            return None

    def _warn_once(self, problem: str) -> None:
        if problem not in self._warned and len(self._warned) < 64:
            self._warned.add(problem)
            log.warning("tool progress: %s", problem)


class CardProgress:
    """A card's progress waiting in the outbox, as facts; called, it builds the update (on the
    event loop, just before it is sent).

    ``value``/``total``/``message`` are the latest numbers and the message that came with them;
    ``status`` is the latest status line that arrived after them (None: none since). The update
    carries the numbers and, as its text, the status line, else the numbers' own message: the
    latest of each kind, however many reports it stands for."""

    __slots__ = ("message", "status", "tool_call_id", "total", "value")

    def __init__(
        self,
        tool_call_id: str,
        value: float | None,
        total: float | None,
        message: str | None,
        status: str | None = None,
    ) -> None:
        self.tool_call_id = tool_call_id
        self.value = value
        self.total = total
        self.message = message
        self.status = status

    @classmethod
    def of(cls, tool_call_id: str, report: ProgressReport) -> CardProgress:
        """A checked report: numbers (and their message), or a status line (a message alone)."""
        value, total, message = report
        if value is None and total is None:
            return cls(tool_call_id, None, None, None, message)
        return cls(tool_call_id, value, total, message)

    def __call__(self) -> ToolCallProgress:
        message = self.status if self.status is not None else self.message
        return build_tool_progress(self.tool_call_id, value=self.value, total=self.total, message=message)

    def then(self, newer: CardProgress) -> CardProgress:
        """What the slot holds once ``newer`` arrives while this one still waits: the latest
        numbers and the latest text, each from whichever report brought it last."""
        if newer.value is None and newer.total is None:  # a status line: the numbers stay
            return CardProgress(self.tool_call_id, self.value, self.total, self.message, newer.status)
        if newer.message is None and self.status is not None:  # numbers alone: the status line stays
            return CardProgress(newer.tool_call_id, newer.value, newer.total, None, self.status)
        return newer


def fold_progress(queued: UpdateBuild, newer: UpdateBuild) -> UpdateBuild:
    """The outbox's fold for a card's queued progress (:meth:`CardProgress.then`)."""
    if isinstance(queued, CardProgress) and isinstance(newer, CardProgress):
        return queued.then(newer)
    return newer


class ToolCards:
    """Open, update and close the turn's real tool cards."""

    def __init__(self, cards: CardLedger, output: TurnOutput, thinking: ThinkCards) -> None:
        self._cards = cards
        self._output = output
        self._thinking = thinking

    def start(
        self,
        tool_call_id: str,
        title: str,
        kind: ToolKind,
        *,
        raw_input: Any,
        locations: tuple[str, ...],
        meta: ProgressMeta | Mapping[str, Any] | None,
        descriptor: Mapping[str, str] | None,
    ) -> bool:
        """Open the card (an id already open is refused), completing the think card first."""
        if tool_call_id in self._cards:
            return False
        self._thinking.close_all()
        self._cards.open(tool_call_id, "tool", title)
        update = build_tool_start(
            tool_call_id, title, kind, raw_input=raw_input, locations=locations, meta=meta
        )
        if descriptor:
            merged = {**descriptor, **(update.field_meta or {})}
            update = update.model_copy(update={"field_meta": merged})
        self._output.submit(update)
        return True

    def is_open(self, tool_call_id: str) -> bool:
        return self._cards.tool(tool_call_id) is not None

    def update(self, tool_call_id: str, update: ToolCallProgress | ToolCallStart) -> bool:
        """Send a non-terminal update of an open card."""
        if not self.is_open(tool_call_id):
            return False
        self._output.submit(update)
        return True

    def progress(self, tool_call_id: str, report: ProgressReport) -> bool:
        """Queue a checked report, replacing this card's progress still waiting to be sent."""
        if self._cards.tool(tool_call_id) is None:
            return False
        self._output.submit_progress(tool_call_id, CardProgress.of(tool_call_id, report), fold_progress)
        return True

    def finish(
        self,
        tool_call_id: str,
        *,
        result_text: str,
        error: str | None,
        raw_output: Any,
        shown: tuple[Any, ...],
    ) -> bool:
        """Close an open card: completed, or failed with ``error``."""
        if self._cards.tool(tool_call_id) is None:
            return False
        duration = self._cards.elapsed(self._cards.take(tool_call_id))
        if error is not None:
            update = build_tool_failed(
                tool_call_id, error, duration=duration, text=result_text, raw_output=raw_output, shown=shown
            )
        else:
            update = build_tool_complete(
                tool_call_id, result_text, raw_output=raw_output, duration=duration, shown=shown
            )
        self._output.submit(update)
        return True
