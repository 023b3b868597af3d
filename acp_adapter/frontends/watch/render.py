"""Pure rendering of a client-side view of the tool-call stack (used by ``acp-progress watch``).

:class:`CardBoard` folds ACP session updates into cards and answer text; the ``card_line`` /
``render_card`` turn that state into terminal lines (``render_card`` cut by terminal cells, with
``rich``'s measure of wide characters). No I/O, so the renderer is tested without a TTY.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp.schema import AgentMessageChunk, AgentThoughtChunk, ToolCallProgress, ToolCallStart
from rich.text import Text

from acp_adapter.frontends.plain.printer import SPINNER_FRAMES, progress_bar
from acp_adapter.protocol.meta import meta_of
from acp_adapter.text import format_elapsed

__all__ = ["CardBoard", "CardView", "card_line", "progress_bar", "progress_of", "render_card"]


STATUS_MARK = {"completed": "✅", "failed": "❌", "pending": "⏸"}
KIND_ICON = {
    "think": "💭",
    "read": "📖",
    "search": "🔎",
    "execute": "💻",
    "edit": "✏️",
    "fetch": "🌐",
    "delete": "🗑",
    "move": "📦",
}


@dataclass
class CardView:
    tool_call_id: str
    title: str
    kind: str
    status: str
    detail: str = ""
    opened_at: float = 0.0
    closed_at: float | None = None
    updates: int = 0
    #: the tool's last reported (value, total), when it reported a total
    progress: tuple[float, float] | None = None

    @property
    def live(self) -> bool:
        return self.status in ("in_progress", "pending")


def progress_of(update: Any) -> tuple[float, float] | None:
    """``(value, total)`` from ``_meta.acpProgress.progress`` of a tool_call_update, when it has a
    positive total (hostile input: anything that is not a finite number is ignored)."""
    meta = meta_of(update)
    progress = meta.progress if meta is not None else None
    if progress is None or progress.value is None or progress.total is None or not progress.total > 0:
        return None
    return float(progress.value), float(progress.total)


def _content_text(content: Any) -> str:
    texts: list[str] = []
    for item in content or []:
        inner = getattr(item, "content", None)
        text = getattr(inner, "text", None)
        if isinstance(text, str):
            texts.append(text)
    return "\n".join(texts)


@dataclass
class CardBoard:
    """The client's picture of one session: cards in arrival order plus the streamed answer."""

    cards: dict[str, CardView] = field(default_factory=dict)
    answer: str = ""
    thoughts: str = ""
    late_updates: int = 0

    def apply(self, update: Any, now: float) -> list[str]:
        """Fold one update in; return the ids of cards whose state changed."""
        if isinstance(update, ToolCallStart):
            card = CardView(
                update.tool_call_id,
                update.title,
                update.kind or "other",
                update.status or "pending",
                _content_text(update.content),
                now,
            )
            self.cards[update.tool_call_id] = card
            return [card.tool_call_id]
        if isinstance(update, ToolCallProgress):
            known = self.cards.get(update.tool_call_id)
            if known is None:
                card = CardView(
                    update.tool_call_id,
                    update.title or update.tool_call_id,
                    update.kind or "other",
                    "pending",
                )
                card.opened_at = now
                self.cards[update.tool_call_id] = card
            else:
                card = known
                if not card.live:
                    self.late_updates += 1
            if update.title:
                card.title = update.title
            if update.status:
                card.status = update.status
                if not card.live:
                    card.closed_at = now
            text = _content_text(update.content)
            if text:
                card.detail = text
            if (progress := progress_of(update)) is not None:
                card.progress = progress
            card.updates += 1
            return [card.tool_call_id]
        if isinstance(update, AgentMessageChunk):
            self.answer += getattr(update.content, "text", "") or ""
        elif isinstance(update, AgentThoughtChunk):
            self.thoughts += getattr(update.content, "text", "") or ""
        return []

    @property
    def live_cards(self) -> list[CardView]:
        return [card for card in self.cards.values() if card.live]


def card_line(card: CardView, *, now: float, mark: str | None = None, frame: int = 0) -> str:
    """One line for a card, uncut: mark (spinner frame or ✅/❌, unless given), icon, title and its
    latest detail (the first line of it)."""
    if mark is None:
        if card.live:
            mark = (
                SPINNER_FRAMES[frame % len(SPINNER_FRAMES)]
                if card.status == "in_progress"
                else STATUS_MARK["pending"]
            )
        else:
            mark = STATUS_MARK.get(card.status, "•")
    icon = KIND_ICON.get(card.kind, "🧰")
    detail = " ".join(card.detail.strip().split("\n", 1)[0].split()) if card.detail.strip() else ""
    if card.live and card.progress is not None:
        # a bar with percentage, the tool's message and the elapsed time beside it
        bar = progress_bar(*card.progress)
        elapsed = format_elapsed(now - card.opened_at)
        detail = f"{bar} {detail} · {elapsed}" if detail else f"{bar} · {elapsed}"
    elif card.live and not detail:
        detail = format_elapsed(now - card.opened_at)
    line = f"{mark} {icon} {card.title}" if mark else f"{icon} {card.title}"
    if detail:
        line += f" — {detail}"
    return line


def render_card(card: CardView, *, frame: int, now: float, width: int = 100) -> str:
    """:func:`card_line` cut to ``width`` terminal cells (wide characters count two), with ``…``."""
    text = Text(card_line(card, now=now, frame=frame))
    if text.cell_len > width:
        text.truncate(width, overflow="ellipsis")
    return text.plain
