"""Progress bubbles: a turn's tool lines laid out as chat messages, and the budget their edits keep.

``accumulate``: the first progress line is posted, later lines edit the same message.
Consecutive identical lines collapse as ``(×N)``; a terminal line replaces its tool's started line
in place; a continuation message starts before the platform's limit (measured in the platform's
unit). ``separate``: one message per line, no progress edits. The plan is one more message,
edited in place like a bubble (or a message per change under ``separate``).

Edits are budgeted per route (:class:`EditBudget`): at most one edit per coalescing window;
changes inside a window wait for a trailing flush, so a burst of updates costs one edit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.events import PlanUpdate, ProgressPayload
from acp_adapter.frontends.bridges.sink import MessageId
from acp_adapter.frontends.bridges.sink_calls import SinkCalls
from acp_adapter.safety.redact import redact_text
from acp_adapter.text import format_elapsed

LONG_TOOL_MS: Final = 30_000
"""Completed lines show the duration when the tool ran at least this long."""


def render_line(payload: ProgressPayload) -> str:
    """``emoji label preview`` / ``✅ label preview (duration)`` / ``❌ label preview — error``."""
    title = f"{payload.label} {payload.preview}" if payload.preview else payload.label
    if payload.phase == "started":
        return f"{payload.emoji} {title}"
    if payload.phase == "completed":
        line = f"✅ {title}"
        if payload.duration_ms is not None and payload.duration_ms >= LONG_TOOL_MS:
            line += f" ({format_elapsed(payload.duration_ms / 1000)})"
        return f"{line} — {payload.diff}" if payload.diff else line
    line = f"❌ {title}"
    return f"{line} — {payload.error}" if payload.error else line


def collapse_lines(lines: list[str]) -> str:
    """Join lines, collapsing runs of identical consecutive lines into ``line (×N)``."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and lines[j + 1] == lines[i]:
            j += 1
        n = j - i + 1
        out.append(lines[i] if n == 1 else f"{lines[i]} (×{n})")
        i = j + 1
    return "\n".join(out)


@dataclass
class ChatMessage:
    """One platform message delivery edits: its entries ``[tool_call_id, line]``, its platform id
    (None until posted) and the text it shows now."""

    entries: list[list[str]] = field(default_factory=list)
    message_id: MessageId = None
    shown: str | None = None

    def text(self) -> str:
        return collapse_lines([line for _, line in self.entries])


async def post_message(calls: SinkCalls, key: str, line: str) -> ChatMessage:
    """A new message holding one line, posted at once (a post is not an edit)."""
    msg = ChatMessage(entries=[[key, line]])
    msg.message_id = await calls.post(line, silent=True)
    msg.shown = line
    return msg


class EditBudget:
    """The route's pending edits: at most one per ``window`` seconds (oldest first) unless forced."""

    def __init__(self, calls: SinkCalls, clock: Callable[[], float], window: float) -> None:
        self._calls = calls
        self._clock = clock
        self._window = window
        self._dirty: list[ChatMessage] = []
        self._last_edit = -math.inf

    @property
    def pending(self) -> int:
        return len(self._dirty)

    def mark(self, msg: ChatMessage) -> None:
        """``msg`` changed: it is edited at the next flush the budget allows."""
        if msg not in self._dirty:
            self._dirty.append(msg)

    def discard(self, msg: ChatMessage) -> None:
        """``msg`` is going away: its pending edit is not made."""
        if msg in self._dirty:
            self._dirty.remove(msg)

    def next_due(self) -> float | None:
        return self._last_edit + self._window if self._dirty else None

    async def flush(self, *, force: bool = False) -> None:
        """Edit dirty messages: one per window (oldest first), or all of them when forced."""
        stats = self._calls.stats
        while self._dirty:
            now = self._clock()
            if not force and now < self._last_edit + self._window:
                return
            msg = self._dirty.pop(0)
            text = msg.text()
            if text == msg.shown:
                continue
            if msg.message_id is None:  # its post failed: try posting again
                msg.message_id = await self._calls.post(text, silent=True)
            else:
                ok = await self._calls.call("edit", self._calls.sink.edit(msg.message_id, redact_text(text)))
                stats.edits += 1
                stats.edit_times.append(now)
                if not ok:
                    stats.failures += 1
            msg.shown = text
            self._last_edit = now
            if not force:
                return


class ProgressBubbles:
    """A turn's tool lines and plan as chat messages, grouped as ``config.grouping`` says."""

    def __init__(self, calls: SinkCalls, edits: EditBudget, config: ProgressConfig) -> None:
        self._calls = calls
        self._edits = edits
        self._separate = config.grouping == "separate"
        self._current: ChatMessage | None = None
        self._started_at: dict[str, tuple[ChatMessage, int]] = {}
        self._open: dict[str, ProgressPayload] = {}  # started lines shown, not yet terminal
        self._plan: ChatMessage | None = None  # the turn's plan message (accumulate: edited in place)

    def begin_turn(self) -> None:
        """A new prompt: the next progress opens a new bubble, and a new plan message."""
        self.close()
        self._open = {}
        self._plan = None

    def close(self) -> None:
        """Answer text (or the turn's end) closes the bubble: a later tool starts a new one below."""
        self._current = None
        self._started_at = {}

    def cut_short(self, reason: str) -> list[ProgressPayload]:
        """Every line still showing a running tool, as its failed line ``❌ … — reason``."""
        return [
            ProgressPayload(
                tool_call_id=p.tool_call_id,
                tool_id=p.tool_id,
                phase="failed",
                label=p.label,
                preview=p.preview,
                emoji=p.emoji,
                index=p.index,
                error=reason,
            )
            for p in self._open.values()
        ]

    async def show(self, payload: ProgressPayload) -> None:
        """One tool's line: a message of its own, or a line in (or an edit of) the bubble."""
        if payload.phase == "started":
            self._open[payload.tool_call_id] = payload
        else:
            self._open.pop(payload.tool_call_id, None)
        if self._separate:
            await self._calls.post(render_line(payload), silent=True)
        else:
            await self._accumulate(payload)

    def edit_plan(self, event: PlanUpdate) -> bool:
        """Edit the turn's plan message in place (coalesced like progress); False when there is
        none to edit (the first plan of the turn, or ``separate``: a message per change)."""
        if self._plan is None or self._separate:
            return False
        self._plan.entries = [["plan", self._calls.fit("\n".join(event.lines))]]
        self._edits.mark(self._plan)
        return True

    async def post_plan(self, event: PlanUpdate) -> None:
        """The plan as a new message (kept for in-place edits unless ``separate``)."""
        text = self._calls.fit("\n".join(event.lines))
        msg = await post_message(self._calls, "plan", text)
        if not self._separate:
            self._plan = msg

    async def _accumulate(self, payload: ProgressPayload) -> None:
        line = self._calls.fit(render_line(payload))
        call_id = payload.tool_call_id
        started = payload.phase == "started"
        msg = self._current
        if msg is None:
            await self._open_message(call_id, line, started)
            return
        slot = self._started_at.pop(call_id, None) if not started else None
        if slot is not None and slot[0] is msg:
            old = msg.entries[slot[1]][1]
            msg.entries[slot[1]][1] = line
            if self._calls.too_long(msg.text()):
                msg.entries[slot[1]][1] = old
                await self._open_message(call_id, line, started)
                return
        else:
            msg.entries.append([call_id, line])
            if self._calls.too_long(msg.text()):
                msg.entries.pop()
                await self._open_message(call_id, line, started)
                return
            if started:
                self._started_at[call_id] = (msg, len(msg.entries) - 1)
        self._edits.mark(msg)

    async def _open_message(self, call_id: str, line: str, started: bool) -> None:
        """Start a bubble or a continuation with one line: posted at once (a post is not an edit)."""
        msg = ChatMessage(entries=[[call_id, line]])
        self._current = msg
        self._started_at = {call_id: (msg, 0)} if started else {}
        msg.message_id = await self._calls.post(line, silent=True)
        msg.shown = line
