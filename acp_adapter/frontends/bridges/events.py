"""The typed values that flow from the projection, through the route queue, into delivery.

Every string in these values has already passed the canonical redactor (the projection and
the runner build them); delivery and platforms only lay them out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

Phase = Literal["started", "completed", "failed"]
ReactionKind = Literal["working", "success", "failure"]
"""Semantic reactions; each platform maps them to an emoji it accepts (meant as 👀 / ✅ / ❌)."""

CHAT_REACTIONS: Final[Mapping[str, str]] = {"working": "👀", "success": "👍", "failure": "👎"}
"""The reaction emoji of every bridge (console and Telegram alike). Telegram rejects ✅ and ❌ as
reactions, and they already mean "this tool finished / failed" on progress lines: one symbol per
meaning."""


@dataclass(frozen=True)
class ProgressPayload:
    """The typed progress payload, exactly what an adapter receives (never raw arguments)."""

    tool_call_id: str
    tool_id: str
    phase: Phase
    label: str
    preview: str
    emoji: str
    index: int
    duration_ms: int | None = None
    error: str | None = None
    #: an edit's change, ``+N −M path`` (completed edits whose content had a diff)
    diff: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of the payload: optional fields only when present."""
        out: dict[str, Any] = {
            "tool_call_id": self.tool_call_id,
            "tool_id": self.tool_id,
            "phase": self.phase,
            "label": self.label,
            "preview": self.preview,
            "emoji": self.emoji,
            "index": self.index,
        }
        if self.duration_ms is not None:
            out["duration_ms"] = self.duration_ms
        if self.error is not None:
            out["error"] = self.error
        if self.diff is not None:
            out["diff"] = self.diff
        return out


@dataclass(frozen=True)
class ProgressEvent:
    """``event_type: "progress"``: one payload for the route."""

    payload: ProgressPayload


@dataclass(frozen=True)
class AnswerText:
    """Cumulative answer text of one answer segment (the text between two tool bubbles)."""

    segment: int
    text: str


@dataclass(frozen=True)
class ReactionEvent:
    """Set a reaction on the user's message that started the turn (best effort, droppable)."""

    kind: ReactionKind


@dataclass(frozen=True)
class ErrorNotice:
    """The turn failed (agent crashed, refused, timed out): a short redacted line for the chat."""

    text: str


@dataclass(frozen=True)
class Notice:
    """A short line the bridge itself says in the chat (e.g. "this is a new conversation")."""

    text: str


@dataclass(frozen=True)
class DeleteMessage:
    """Delete a message this bridge posted earlier (platform message id as the sink returned it)."""

    message_id: Any


@dataclass(frozen=True)
class SummaryUpdate:
    """A new progress summary of the running turn, for its placeholder message.

    Only the latest revision matters: the queue keeps one per turn (a newer one replaces an
    unsent older one) and delivery ignores anything outside its turn or not newer than what the
    placeholder shows.
    """

    summary: str
    revision: int


@dataclass(frozen=True)
class PlanUpdate:
    """The agent's plan, as checklist lines (``plan 1/3``, ``✓ Read notes.py · high``, …).

    One message per turn, edited in place as entries change (accumulate), or a new message per
    change (separate); the queue keeps only the newest unsent one, as it does summaries.
    """

    lines: tuple[str, ...]


@dataclass(frozen=True)
class ThoughtText:
    """A thought of the agent that ended, posted only when the instance asks for thoughts."""

    text: str


@dataclass(frozen=True)
class TurnStart:
    """A prompt from the chat begins: reactions go on ``user_message``; a new bubble will open."""

    user_message: Any


@dataclass(frozen=True)
class TurnEnd:
    """The final delivery event of a turn: flush everything, close the bubble, post the answer.

    ``interrupted``: why the turn was cut short by the bridge itself (``"the bridge stopped"``);
    every progress line still open ends as ``❌ … — <interrupted>`` instead of spinning on.
    """

    stop_reason: str
    interrupted: str | None = None


@dataclass(frozen=True)
class TypingEvent:
    """Typing on/off for the chat, queued in order with everything else the route delivers.

    Through the queue (not a direct sink call from the turn) so a typing indicator can never
    overtake a message queued before it or race a delivery in flight; droppable under pressure
    (the turn's end turns typing off anyway).
    """

    on: bool


BridgeEvent = (
    ProgressEvent
    | AnswerText
    | ReactionEvent
    | SummaryUpdate
    | PlanUpdate
    | ThoughtText
    | ErrorNotice
    | Notice
    | DeleteMessage
    | TurnStart
    | TurnEnd
    | TypingEvent
)


def is_terminal(event: BridgeEvent) -> bool:
    """Events the queue must never drop: terminal progress, turn start/final, error and delete."""
    if isinstance(event, ProgressEvent):
        return event.payload.phase != "started"
    return isinstance(event, TurnStart | TurnEnd | ErrorNotice | Notice | DeleteMessage)
