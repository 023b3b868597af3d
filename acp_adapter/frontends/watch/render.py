"""Pure rendering of a client-side view of the tool-call stack (used by ``acp-progress watch``).

:class:`CardBoard` folds ACP session updates into cards and answer text; ``card_parts`` /
``card_line`` turn that state into terminal lines and ``fit_keeping_clock`` cuts one to the
terminal's cells (``rich``'s measure of wide characters), the clock kept whole. No I/O, so the
renderer is tested without a TTY.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ClientCapabilities,
    PlanEntry,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)
from rich.cells import cell_len

from acp_adapter.frontends._render import fit_line, progress_bar, spinner_frame
from acp_adapter.frontends._updates import Diff, diffs_of, terminal_output_of, terminals_of
from acp_adapter.protocol.cards import Card, CardAccumulator
from acp_adapter.safety.terminal_text import terminal_safe
from acp_adapter.text import format_elapsed
from acp_adapter.tooling.presentation import card_emoji

STATUS_MARK = {"completed": "✅", "failed": "❌", "pending": "⏸"}


#: A card as the watch shows it: the shared accumulator's card (kept under its old name).
CardView = Card


#: what ``watch`` and ``chat`` tell the agent in ``initialize``: they render a command's terminal
#: from its card (``_meta.terminal_output``), so an agent that runs commands itself shows them live
RENDERS_CARD_TERMINALS = ClientCapabilities(field_meta={"terminal_output": True})

#: the most of a card terminal's output a card keeps (its newest characters; a few lines are shown)
MAX_TERMINAL_OUTPUT = 64 * 1024


@dataclass
class CardContent:
    """What a card's content holds besides text: file edits and terminals (replace semantics,
    as ACP content is: the latest update that has content says all of it)."""

    diffs: list[Diff] = field(default_factory=list)
    terminals: list[str] = field(default_factory=list)
    output: str | None = None  # the terminal's output, when the agent sent it


@dataclass
class CardBoard:
    """The client's picture of one session: cards (the shared :class:`CardAccumulator`) in arrival
    order plus the streamed answer and thoughts, the plan, the cards' diffs and terminals and the
    latest usage."""

    accumulator: CardAccumulator = field(default_factory=CardAccumulator)
    answer: str = ""
    thoughts: str = ""
    late_updates: int = 0
    #: the latest plan (a ``plan`` update replaces the whole list); None until one arrives
    plan: list[PlanEntry] | None = None
    usage: UsageUpdate | None = None
    contents: dict[str, CardContent] = field(default_factory=dict)
    #: the last update was a thought chunk: the thought is still being written
    thinking: bool = False
    #: the last update was an answer chunk: the answer is still being written (on a pipe, no line
    #: of ours — a summary — may land between its lines)
    answering: bool = False

    @property
    def cards(self) -> dict[str, Card]:
        return self.accumulator.cards

    def apply(self, update: Any, now: float) -> list[str]:
        """Fold one update in; return the ids of cards whose state changed."""
        if isinstance(
            update, AgentThoughtChunk | AgentMessageChunk | AgentPlanUpdate | ToolCallStart | ToolCallProgress
        ):
            # what is shown ends a thought; a session-level update (commands, usage) does not
            self.thinking = isinstance(update, AgentThoughtChunk)
            self.answering = isinstance(update, AgentMessageChunk)
        applied = self.accumulator.apply(update, now)
        if applied is not None:
            if applied.late:
                self.late_updates += 1
            if isinstance(update, ToolCallStart | ToolCallProgress):
                self._content(applied.card.tool_call_id, update)
            return [applied.card.tool_call_id]
        if isinstance(update, AgentMessageChunk):
            self.answer += getattr(update.content, "text", "") or ""
        elif isinstance(update, AgentThoughtChunk):
            self.thoughts += getattr(update.content, "text", "") or ""
        elif isinstance(update, AgentPlanUpdate):
            self.plan = list(update.entries)
        elif isinstance(update, UsageUpdate):
            self.usage = update
        return []

    def _content(self, card_id: str, update: ToolCallStart | ToolCallProgress) -> None:
        content = self.contents.setdefault(card_id, CardContent())
        if update.content is not None:
            content.diffs = diffs_of(update.content)
            content.terminals = terminals_of(update.content)
        output = terminal_output_of(update)
        if output is not None:  # each piece is what is new (the convention): kept whole, bounded
            content.output = ((content.output or "") + output)[-MAX_TERMINAL_OUTPUT:]

    @property
    def live_cards(self) -> list[Card]:
        return self.accumulator.live


def card_line(card: CardView, *, now: float, mark: str | None = None, frame: int = 0) -> str:
    """One line for a card, uncut: mark (spinner frame or ✅/❌, unless given), icon, title and its
    latest detail (the first line of it)."""
    head, clock = card_parts(card, now=now, mark=mark, frame=frame)
    return head + clock


def card_parts(card: CardView, *, now: float, mark: str | None = None, frame: int = 0) -> tuple[str, str]:
    """The line of a card as (everything but the clock, the clock): a live card's elapsed time is
    its end (`` · 1.5s`` after a bar, `` — 1.5s`` alone), the part a narrow terminal must keep."""
    if mark is None:
        if card.live:
            mark = spinner_frame(frame) if card.status == "in_progress" else STATUS_MARK["pending"]
        else:
            mark = STATUS_MARK.get(card.status, "•")
    icon = card_emoji(card.kind, card.tool_id, card.emoji)
    # the agent's text (title, tool output) may hold escape sequences: shown, never obeyed
    detail = " ".join(card.detail.strip().split("\n", 1)[0].split()) if card.detail.strip() else ""
    detail = terminal_safe(detail)
    title = terminal_safe(card.title)
    line = f"{mark} {icon} {title}" if mark else f"{icon} {title}"
    if card.live and card.progress is not None:
        # a bar with percentage, the tool's message and the elapsed time beside it
        bar = progress_bar(*card.progress)
        head = f"{line} — {bar} {detail}" if detail else f"{line} — {bar}"
        return head, f" · {format_elapsed(now - card.opened_at)}"
    if card.live and not detail:
        return line, f" — {format_elapsed(now - card.opened_at)}"
    return (f"{line} — {detail}" if detail else line), ""


def fit_keeping_clock(head: str, clock: str, width: int) -> str:
    """``head + clock`` in ``width`` cells: the head is cut (with ``…``), the clock kept whole."""
    room = width - cell_len(clock)
    if not clock or room < 12:  # too narrow to keep both: cut the whole line
        return fit_line(head + clock, width)
    return fit_line(head, room) + clock
