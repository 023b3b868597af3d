"""What the summary may know about a turn: a snapshot folded from the canonical update stream.

The generator never sees the stream itself, only this snapshot: the person's request (``<context>``
payloads removed, redacted, at most 2,000 characters), the elapsed time, whether the model is
reasoning now, the names of running tools and of the last 5 finished ones, the previous summary.
Raw reasoning, tool input and tool output never enter it, so no prompt built from it can leak them.

:class:`SnapshotTracker` folds ACP ``SessionUpdate`` objects in O(1) each (it runs inside the
primary stream's delivery path) and reports what an update meant for scheduling: was it a stream
chunk, was it non-terminal, did it add activity (reasoning started, a tool started or ended).
Think cards (``kind="think"``) are the model thinking, not tools: they mark reasoning as active.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ToolCallProgress,
    ToolCallStart,
)

from acp_adapter.protocol.cards import CardAccumulator
from acp_adapter.safety.redact import redact_text
from acp_adapter.text import ellipsize, format_elapsed

USER_TEXT_LIMIT = 2000
COMPLETED_TOOLS_KEPT = 5
TOOL_NAME_LIMIT = 80

#: Bits returned by :meth:`SnapshotTracker.observe`.
CHUNK = 1  # a primary stream chunk (answer, reasoning, tool or plan update)
LIVE = 2  # … that is not terminal (not a tool's or think card's completed/failed update)
ACTIVITY = 4  # … that adds activity: reasoning started, a tool started or ended

_TERMINAL = frozenset({"completed", "failed"})
_CONTEXT_BLOCK = re.compile(r"<context\b[^>]*>.*?</context\s*>", re.I | re.S)
_CONTEXT_OPEN = re.compile(r"<context\b[^>]*>.*\Z", re.I | re.S)
_CONTROL = re.compile(r"[\x00-\x1f\x7f`]")


def clean_user_text(text: str, limit: int = USER_TEXT_LIMIT) -> str:
    """The request as a summarizer may see it: ``<context>…</context>`` payloads (attached files)
    removed, redacted, one paragraph, at most ``limit`` characters."""
    text = _CONTEXT_OPEN.sub(" ", _CONTEXT_BLOCK.sub(" ", text))
    text = " ".join(redact_text(text).split())
    return ellipsize(text, limit, words=True)


def tool_name(title: str | None, kind: str | None) -> str:
    """A tool's displayable name: its card title (redacted, one line, no backticks, capped), else
    its kind. Never its arguments."""
    name = " ".join(_CONTROL.sub(" ", redact_text(title or "")).split())
    if not name:
        name = kind if kind and kind not in ("other", "think") else "tool"
    return ellipsize(name, TOOL_NAME_LIMIT, words=True)


@dataclass(frozen=True, slots=True)
class ProgressSnapshot:
    """The facts a summary is written from (all strings already redacted)."""

    user_text: str
    elapsed: float
    reasoning_active: bool
    active_tools: tuple[str, ...]
    completed_tools: tuple[str, ...]
    previous: str | None = None
    answering: bool = False
    activity: int = 0

    @property
    def elapsed_text(self) -> str:
        return format_elapsed(self.elapsed)

    @property
    def active_tools_text(self) -> str:
        return ", ".join(self.active_tools) or "none"

    @property
    def completed_tools_text(self) -> str:
        return ", ".join(self.completed_tools) or "none"

    @property
    def reasoning_active_text(self) -> str:
        return "yes" if self.reasoning_active else "no"


def _same_card(update: ToolCallProgress) -> bool:
    """True if ``update`` changes no status, title or kind: only content, meta or locations."""
    return update.status is None and update.title is None and update.kind is None


class SnapshotTracker:
    """The mutable state behind :class:`ProgressSnapshot`, updated by one update at a time."""

    def __init__(self, user_text: str = "") -> None:
        self.user_text = clean_user_text(user_text)
        self.reasoning_active = False
        self.answering = False
        self.activity = 0
        self.chunks = 0
        self._active: dict[str, str] = {}
        self._completed: deque[str] = deque(maxlen=COMPLETED_TOOLS_KEPT)
        #: the cards' facts (the shared client-side accumulator; no ``_meta`` reading needed here)
        self._cards = CardAccumulator(reports=False)

    def snapshot(self, elapsed: float, previous: str | None) -> ProgressSnapshot:
        return ProgressSnapshot(
            user_text=self.user_text,
            elapsed=max(0.0, elapsed),
            reasoning_active=self.reasoning_active,
            active_tools=tuple(self._active.values()),
            completed_tools=tuple(self._completed),
            previous=previous,
            answering=self.answering,
            activity=self.activity,
        )

    def _reasoning(self) -> int:
        self.answering = False
        if self.reasoning_active:
            return 0
        self.reasoning_active = True
        self.activity += 1
        return ACTIVITY

    def _finish_tool(self, tool_call_id: str, status: str, title: str | None) -> int:
        name = self._active.pop(tool_call_id, None)
        if name is None:
            if not title:
                return 0
            name = tool_name(title, None)
        elif title:
            name = tool_name(title, None)
        self._completed.append(f"{name} (failed)" if status == "failed" else name)
        self.activity += 1
        return ACTIVITY

    def observe(self, update: Any) -> int:
        """Fold one ``SessionUpdate`` in; returns :data:`CHUNK` | :data:`LIVE` | :data:`ACTIVITY` bits."""
        if isinstance(update, AgentMessageChunk):
            self.chunks += 1
            self.reasoning_active = False
            self.answering = True
            return CHUNK | LIVE
        if isinstance(update, AgentThoughtChunk):
            self.chunks += 1
            return CHUNK | LIVE | self._reasoning()
        if isinstance(update, ToolCallStart | ToolCallProgress):
            self.chunks += 1
            known = self._cards.get(update.tool_call_id)
            if known is not None and isinstance(update, ToolCallProgress) and _same_card(update):
                # a heartbeat or a tool's progress on a card we know: the same activity (the hot
                # path, so nothing is folded: content is not what a summary may know)
                return CHUNK | LIVE
            was_think = known is not None and known.think
            card = self._cards.fold(update, 0.0).card
            terminal = update.status in _TERMINAL
            if isinstance(update, ToolCallStart):
                if card.think:
                    return CHUNK if terminal else CHUNK | LIVE | self._reasoning()
                self.reasoning_active = False
                self.answering = False
                if terminal:
                    return CHUNK | self._finish_tool(card.tool_call_id, update.status or "", update.title)
                self._active[card.tool_call_id] = tool_name(update.title, update.kind)
                self.activity += 1
                return CHUNK | LIVE | ACTIVITY
            card_id = card.tool_call_id
            if was_think or update.kind == "think":
                if terminal and update.status == "failed":
                    self.reasoning_active = False
                return CHUNK if terminal else CHUNK | LIVE  # a heartbeat: the same thinking, no new activity
            if terminal:
                return CHUNK | self._finish_tool(card_id, update.status or "", update.title)
            if card_id in self._active:
                if update.title:
                    self._active[card_id] = tool_name(update.title, update.kind)
                return CHUNK | LIVE
            # an update for a card we never saw start (we attached late): it is running now
            self._active[card_id] = tool_name(update.title, update.kind)
            self.reasoning_active = False
            self.activity += 1
            return CHUNK | LIVE | ACTIVITY
        if isinstance(update, AgentPlanUpdate):
            self.chunks += 1
            return CHUNK | LIVE
        return 0  # usage, commands, modes, session info, user echo: not the primary stream's work
