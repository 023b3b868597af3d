"""The one card accumulator: what each tool card of a session looks like now.

It lives in the protocol layer, beside the ``_meta`` models it reads, because both sides fold
cards: the client's front-ends and the progress summary, which the agent runs too.

Every front-end that shows cards folds the same ACP updates (``tool_call`` starts and
``tool_call_update`` changes) into the same facts — title, kind, status, latest text, the tool's
reported progress, when it opened and closed — so it is done once, here, and a front-end keeps
only what is its own (the watch board's answer text, a bridge's delivery state, a summary's
activity bits).

Why not the SDK's ``acp.contrib.session_state.SessionAccumulator``: its ``apply`` answers a deep
copy of the *whole* session (every card, every message chunk ever received) on each update, which
is O(history) per update on a stream that carries thousands of progress updates a second, and it
keeps every chunk forever; it also knows nothing of ``_meta.acpProgress``. The merge rules are the
same as the SDK's (a start replaces the card, an update changes only the fields it carries, an
update for a card never seen starts one), plus the progress report and the open/close times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from acp.schema import ToolCallProgress, ToolCallStart

from acp_adapter.protocol.meta import ProgressReport, meta_of

#: Statuses after which a card is finished.
TERMINAL = frozenset({"completed", "failed"})


def content_text(content: Any) -> str:
    """The text of a card's content items (text blocks only), one per line."""
    texts: list[str] = []
    for item in content or []:
        inner = getattr(item, "content", None)
        text = getattr(inner, "text", None)
        if isinstance(text, str):
            texts.append(text)
    return "\n".join(texts)


def bar_of(report: ProgressReport) -> tuple[float, float] | None:
    """``(value, total)`` of a report that has a value and a positive total, else ``None``."""
    if report.value is None or report.total is None or not report.total > 0:
        return None
    return float(report.value), float(report.total)


@dataclass
class Card:
    """One tool card as the client knows it now (strings as the agent sent them)."""

    tool_call_id: str
    title: str
    kind: str
    status: str
    #: the latest non-empty text content (replace semantics, as ACP content is)
    detail: str = ""
    opened_at: float = 0.0
    closed_at: float | None = None
    #: ``tool_call_update``s applied (a start is not one)
    updates: int = 0
    #: the tool's last report (``_meta.acpProgress.progress``), when this project's agent sent one
    report: ProgressReport | None = None
    #: ``_meta.acpProgress.toolId`` from the start, when this project's agent named the tool
    tool_id: str | None = None
    #: ``_meta.acpProgress.emoji`` from the start: the tool's own symbol (see ``card_emoji``)
    emoji: str | None = None
    raw_input: Any = None
    #: the last reported ``(value, total)`` with a positive total: a bar stays through message-only reports
    progress: tuple[float, float] | None = None

    @property
    def live(self) -> bool:
        return self.status in ("in_progress", "pending")

    @property
    def think(self) -> bool:
        return self.kind == "think"


class Applied(NamedTuple):
    """What one update did: the card it touched and whether it came after the card had ended.

    A named tuple, not a frozen dataclass: one is made per update, on the delivery path."""

    card: Card
    late: bool = False
    started: bool = False


class CardAccumulator:
    """Cards of one session by id, in arrival order. Pure: the caller passes the clock."""

    def __init__(self, *, reports: bool = True) -> None:
        """``reports=False`` skips reading ``_meta`` (the tool's progress reports, the tool id):
        for a consumer on the agent's own delivery path that needs only the cards' shape."""
        self.cards: dict[str, Card] = {}
        self._reports = reports

    def apply(self, update: Any, now: float) -> Applied | None:
        """Fold one session update in; ``None`` when it is not about a tool card."""
        if isinstance(update, ToolCallStart | ToolCallProgress):
            return self.fold(update, now)
        return None

    def fold(self, update: ToolCallStart | ToolCallProgress, now: float) -> Applied:
        """Fold one tool card update in."""
        if isinstance(update, ToolCallStart):
            return self._start(update, now)
        return self._progress(update, now)

    def _start(self, update: ToolCallStart, now: float) -> Applied:
        """A card opens (a second start for the same id replaces its card)."""
        meta = meta_of(update) if self._reports else None
        card = Card(
            update.tool_call_id,
            update.title,
            update.kind or "other",
            update.status or "pending",
            content_text(update.content),
            now,
            tool_id=meta.tool_id if meta is not None else None,
            emoji=meta.emoji if meta is not None else None,
            raw_input=update.raw_input,
        )
        if not card.live:
            card.closed_at = now
        self.cards[update.tool_call_id] = card
        return Applied(card, started=True)

    def _progress(self, update: ToolCallProgress, now: float) -> Applied:
        """A card changes; an update for a card never started opens one (a client joining mid-turn
        sees it), and one for a card already closed is marked late."""
        known = self.cards.get(update.tool_call_id)
        started = known is None
        if known is None:
            card_id = update.tool_call_id
            title = update.title or card_id
            card = Card(card_id, title, update.kind or "other", "pending", opened_at=now)
            self.cards[card_id] = card
        else:
            card = known
        late = not started and not card.live
        if update.title:
            card.title = update.title
        if update.kind:
            card.kind = update.kind
        if update.raw_input is not None:
            card.raw_input = update.raw_input
        if update.status:
            card.status = update.status
            if not card.live:
                card.closed_at = now
        if update.content:
            text = content_text(update.content)
            if text:
                card.detail = text
        meta = meta_of(update) if self._reports else None
        if meta is not None and meta.tool_id is not None and card.tool_id is None:
            card.tool_id = meta.tool_id  # a card first seen mid-turn may still be named
        if meta is not None and meta.progress is not None:
            card.report = meta.progress
            if (fraction := bar_of(meta.progress)) is not None:
                card.progress = fraction
        card.updates += 1
        return Applied(card, late=late, started=started)

    def get(self, tool_call_id: str) -> Card | None:
        return self.cards.get(tool_call_id)

    @property
    def live(self) -> list[Card]:
        return [card for card in self.cards.values() if card.live]
