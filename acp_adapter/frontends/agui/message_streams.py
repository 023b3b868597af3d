"""A run's answer text and reasoning as AG-UI messages: one per uninterrupted stretch.

Answer text → ``TEXT_MESSAGE_START/CONTENT/END``; the agent's reasoning → ``REASONING_START``,
``REASONING_MESSAGE_START/CONTENT/END``, ``REASONING_END``. One of them open closes the other.
Each streams through its own :class:`~acp_adapter.safety.redact.stream.StreamRedactor`, so a
secret split across chunks is still caught, and what it holds back is flushed when it closes.
"""

from __future__ import annotations

from collections.abc import Callable

from ag_ui.core import (
    BaseEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)

from acp_adapter.safety.redact.stream import StreamRedactor


class MessageStreams:
    """The open text message and reasoning span of one run; ``new_id(kind)`` names each message
    (ids are the run's, shared with its other events)."""

    def __init__(self, new_id: Callable[[str], str]) -> None:
        self._new_id = new_id
        self._text_id: str | None = None
        self._text_redactor = StreamRedactor()
        #: the run's latest answer message: the parent of the tool calls that follow it
        self.last_text_id: str | None = None
        self._reasoning_id: str | None = None
        self._reasoning_redactor = StreamRedactor()

    def new_run(self) -> None:
        """A resumed turn goes on as a new run: its tool calls have no answer message of it yet."""
        self.last_text_id = None

    def text(self, chunk: str) -> list[BaseEvent]:
        if not chunk:
            return []
        events = self._close_reasoning()
        if self._text_id is None:
            self._text_id = self._new_id("text")
            self.last_text_id = self._text_id
            events.append(TextMessageStartEvent(message_id=self._text_id, role="assistant"))
        delta = self._text_redactor.feed(chunk)
        if delta:
            events.append(TextMessageContentEvent(message_id=self._text_id, delta=delta))
        return events

    def reasoning(self, chunk: str) -> list[BaseEvent]:
        if not chunk:
            return []
        events = self._close_text()
        if self._reasoning_id is None:
            self._reasoning_id = self._new_id("reasoning")
            events.append(ReasoningStartEvent(message_id=self._reasoning_id))
            events.append(ReasoningMessageStartEvent(message_id=self._reasoning_id, role="reasoning"))
        delta = self._reasoning_redactor.feed(chunk)
        if delta:
            events.append(ReasoningMessageContentEvent(message_id=self._reasoning_id, delta=delta))
        return events

    def close(self) -> list[BaseEvent]:
        """Close whatever is open (before a tool call, and before the run's last event)."""
        return self._close_text() + self._close_reasoning()

    def _close_text(self) -> list[BaseEvent]:
        if self._text_id is None:
            return []
        events: list[BaseEvent] = []
        rest = self._text_redactor.flush()
        if rest:
            events.append(TextMessageContentEvent(message_id=self._text_id, delta=rest))
        events.append(TextMessageEndEvent(message_id=self._text_id))
        self._text_id = None
        return events

    def _close_reasoning(self) -> list[BaseEvent]:
        if self._reasoning_id is None:
            return []
        events: list[BaseEvent] = []
        rest = self._reasoning_redactor.flush()
        if rest:
            events.append(ReasoningMessageContentEvent(message_id=self._reasoning_id, delta=rest))
        events.append(ReasoningMessageEndEvent(message_id=self._reasoning_id))
        events.append(ReasoningEndEvent(message_id=self._reasoning_id))
        self._reasoning_id = None
        return events
