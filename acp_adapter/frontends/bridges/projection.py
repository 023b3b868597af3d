"""Pure projection: ACP session updates of one turn -> typed bridge delivery events.

No I/O and no clock of its own (the caller passes ``now``), so a table test drives it with
plain values. One :class:`TurnProjection` per delivered turn: ``index`` restarts at 1 and
the ``new`` mode's "same tool as before" memory is per turn.

Labels and previews are rebuilt here from the presentation registry (the tool id this
project's agent puts in ``_meta.acpProgress.toolId``, and the card's raw input), then pass
the canonical redactor: adapters never see raw arguments. Cards of other ACP agents carry no
tool id; their ACP title stands in for it, with a safe scalar preview of the raw input.
Think cards are not tools: they only keep the chat's typing indicator on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from acp_adapter.frontends._updates import diffs_of, plan_lines, plan_progress
from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.events import (
    AnswerText,
    BridgeEvent,
    Phase,
    PlanUpdate,
    ProgressEvent,
    ProgressPayload,
    ReactionEvent,
    ThoughtText,
)
from acp_adapter.protocol.cards import Card, CardAccumulator
from acp_adapter.protocol.meta import ProgressMeta, meta_of
from acp_adapter.safety.redact import redact_text
from acp_adapter.tooling.presentation import (
    PREVIEW_CAP,
    UNKNOWN_EMOJI,
    PresentationRegistry,
    card_emoji,
    render_label,
)
from acp_adapter.tools import one_line

ERROR_CAP: Final = 160
"""Failed lines carry at most this many characters of (redacted, one-line) error."""

_TERMINAL: Final = {"completed": "completed", "failed": "failed"}
THOUGHT_CAP: Final = 600
"""A posted thought carries at most this many characters (one line)."""


def _diff_line(content: object, workspace: str | None) -> str | None:
    """``+N −M path`` for each file the content edits (``; `` between files), redacted."""
    diffs = diffs_of(content)
    return redact_text("; ".join(d.short(workspace) for d in diffs[:5])) if diffs else None


@dataclass
class _Call:
    tool_id: str
    label: str
    preview: str
    emoji: str
    started_at: float | None
    think: bool
    done: bool = False
    source_id: str | None = None
    diff: str | None = None  # ``+N −M path`` of the edit, once its content had a diff


def _acp_meta(update: ToolCallStart | ToolCallProgress) -> ProgressMeta:
    """Our ``_meta.acpProgress`` of ``update``; an empty one when it has none (or a foreign one)."""
    return meta_of(update) or _NO_META


_NO_META = ProgressMeta()


def _content_text(update: ToolCallProgress) -> str:
    parts: list[str] = []
    for item in update.content or ():
        block = getattr(item, "content", None)
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
    return " ".join(parts)


class TurnProjection:
    """Projects one turn's updates; call :meth:`project` for each update, in order."""

    def __init__(
        self,
        config: ProgressConfig,
        *,
        registry: PresentationRegistry | None = None,
        workspace_id: str | None = None,
    ) -> None:
        self.config = config
        self._registry = registry or PresentationRegistry()
        self._workspace_id = workspace_id
        self._cap: int | None = None if config.tool_progress == "verbose" else PREVIEW_CAP
        #: the cards' facts (title, input, tool id), shared with every front-end
        self._cards = CardAccumulator()
        #: this projection's own state of each card: its presentation and whether it was delivered done
        self._calls: dict[str, _Call] = {}
        self._index = 0
        self._last_started_tool: str | None = None
        self._last_reaction: str | None = None
        self._segment = 0
        self._segment_text = ""
        self._answer_since_tool = False
        self._thought = ""  # the thought being written (posted once it ends, when asked for)
        self._plan: tuple[str, ...] | None = None

    # ------------------------------------------------------------------ state for typing

    @property
    def active(self) -> bool:
        """True while a tool or think card is open: the chat should show "typing"."""
        return any(not c.done for c in self._calls.values())

    # ------------------------------------------------------------------------ projection

    def project(self, update: Any, now: float) -> list[BridgeEvent]:
        """The delivery events one ACP session update produces (often none)."""
        if isinstance(update, AgentThoughtChunk):
            if self.config.thoughts:
                self._thought += getattr(update.content, "text", "") or ""
            return []
        events = (
            self.finish() if isinstance(update, ToolCallStart | AgentMessageChunk | AgentPlanUpdate) else []
        )
        if isinstance(update, ToolCallStart):
            return events + self._on_start(update, now)
        if isinstance(update, ToolCallProgress):
            return self._on_progress(update, now)
        if isinstance(update, AgentMessageChunk):
            return events + self._on_text(update)
        if isinstance(update, AgentPlanUpdate):
            return events + self._on_plan(update)
        return []

    def finish(self) -> list[BridgeEvent]:
        """The thought still being written, as an event (the turn ended or something else came)."""
        thought, self._thought = self._thought.strip(), ""
        return [ThoughtText(redact_text(one_line(thought, THOUGHT_CAP)))] if thought else []

    def _on_plan(self, update: AgentPlanUpdate) -> list[BridgeEvent]:
        entries = list(update.entries)
        lines = tuple(redact_text(line) for line in [plan_progress(entries), *plan_lines(entries)])
        if lines == self._plan:
            return []  # nothing changed: no edit
        self._plan = lines
        return [PlanUpdate(lines)]

    def _present(self, tool_id: str | None, card: Card, meta: Any) -> _Call:
        """How the card's tool is shown (its facts from the shared accumulator)."""
        title, raw_input = card.title, card.raw_input
        key = tool_id or (title or "").strip() or "tool"
        event_meta = meta if isinstance(meta, Mapping) else None
        presentation = self._registry.lookup(key, self._workspace_id, event_meta)
        label, preview = render_label(key, raw_input, presentation, cap=self._cap)
        described = None if presentation.emoji == UNKNOWN_EMOJI else presentation.emoji
        return _Call(
            tool_id=redact_text(key),
            label=redact_text(label),
            preview=redact_text(preview),
            # the symbol every front-end shows: an undescribed tool falls back to its kind's
            emoji=card_emoji(card.kind, tool_id, described),
            started_at=None,
            think=False,
            source_id=tool_id,
        )

    def _on_start(self, update: ToolCallStart, now: float) -> list[BridgeEvent]:
        call_id = update.tool_call_id
        if call_id in self._calls:
            return []  # a repeated start is not a new tool call
        if update.kind == "think":
            self._cards.fold(update, now)
            self._calls[call_id] = _Call("think", "", "", "", now, think=True)
            return []
        card = self._cards.fold(update, now).card
        call = self._present(card.tool_id, card, update.field_meta)
        call.started_at = now
        call.diff = _diff_line(update.content, self._workspace_id)
        self._calls[call_id] = call
        events: list[BridgeEvent] = []
        if self._answer_since_tool:
            # answer text landed since the last tool: the next answer text is a new segment
            self._segment += 1
            self._segment_text = ""
            self._answer_since_tool = False
        if update.status in _TERMINAL:  # some agents announce finished calls in one update
            return events + self._terminal(call_id, call, update.status, "", now, started=True)
        events.extend(self._started(call_id, call))
        return events

    def _started(self, call_id: str, call: _Call) -> list[BridgeEvent]:
        events: list[BridgeEvent] = []
        mode = self.config.tool_progress
        if mode != "off" and not (mode == "new" and call.tool_id == self._last_started_tool):
            events.append(ProgressEvent(self._payload(call_id, call, "started")))
        self._last_started_tool = call.tool_id
        events.extend(self._react("working"))
        return events

    def _on_progress(self, update: ToolCallProgress, now: float) -> list[BridgeEvent]:
        call_id = update.tool_call_id
        card = self._cards.fold(update, now).card
        call = self._calls.get(call_id)
        if call is None:
            # a terminal (or progress) update for a call we never saw start (joined mid-turn)
            call = self._present(card.tool_id, card, update.field_meta)
            self._calls[call_id] = call
        if call.done:
            return []  # nothing after a tool's terminal phase
        if not call.think and (update.title is not None or update.raw_input is not None):
            # other agents often fill in the title and the input after the start
            fresh = self._present(call.source_id, card, update.field_meta)
            fresh.started_at, fresh.think, fresh.diff = call.started_at, call.think, call.diff
            self._calls[call_id] = call = fresh
        call.diff = _diff_line(update.content, self._workspace_id) or call.diff
        status = update.status
        if status not in _TERMINAL:
            return []
        meta_error = _acp_meta(update).error
        error = meta_error if isinstance(meta_error, str) else _content_text(update)
        return self._terminal(call_id, call, status, error, now, started=False)

    def _terminal(
        self, call_id: str, call: _Call, status: str, error: str, now: float, *, started: bool
    ) -> list[BridgeEvent]:
        call.done = True
        if call.think:
            return []
        phase: Phase = "completed" if status == "completed" else "failed"
        events: list[BridgeEvent] = []
        if self.config.tool_progress != "off":
            duration = None if call.started_at is None else max(0, round((now - call.started_at) * 1000))
            short = (one_line(error, ERROR_CAP) or "failed") if phase == "failed" else None
            diff = call.diff if phase == "completed" else None
            events.append(ProgressEvent(self._payload(call_id, call, phase, duration, short, diff)))
        events.extend(self._react("success" if phase == "completed" else "failure"))
        return events

    def _payload(
        self,
        call_id: str,
        call: _Call,
        phase: Phase,
        duration_ms: int | None = None,
        error: str | None = None,
        diff: str | None = None,
    ) -> ProgressPayload:
        self._index += 1
        return ProgressPayload(
            tool_call_id=redact_text(call_id),
            tool_id=call.tool_id,
            phase=phase,
            label=call.label,
            preview=call.preview,
            emoji=call.emoji,
            index=self._index,
            duration_ms=duration_ms,
            error=error,
            diff=diff,
        )

    def _react(self, kind: str) -> list[BridgeEvent]:
        if not self.config.reactions or kind == self._last_reaction:
            return []
        self._last_reaction = kind
        if kind == "working":
            return [ReactionEvent("working")]
        return [ReactionEvent("success" if kind == "success" else "failure")]

    def _on_text(self, update: AgentMessageChunk) -> list[BridgeEvent]:
        block = update.content
        if not isinstance(block, TextContentBlock) or not block.text:
            return []
        self._segment_text += block.text
        self._answer_since_tool = True
        return [AnswerText(self._segment, redact_text(self._segment_text))]
