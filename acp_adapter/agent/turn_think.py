"""A turn's think cards: the spinner the person sees while the model is silent.

At most one think card is open per session, so a new one, or a real tool card, first completes the
one still open (no orphan spinner). A card can open early, on the event loop as the prompt arrives,
and the agent's own start then adopts it, so the spinner never waits for the agent's setup. The
turn's latest progress summary rides on every heartbeat of its think cards, never on the thought
channel.

Not thread-safe on its own: :class:`~acp_adapter.agent.turn_state.SessionStream` calls it only under
its one lock and only while the turn is open.
"""

from __future__ import annotations

import itertools
import os

from acp.schema import ToolCallProgress

from acp_adapter.agent.turn_cards import CardLedger
from acp_adapter.agent.turn_output import TurnOutput
from acp_adapter.tools import (
    build_thinking_complete,
    build_thinking_failed,
    build_thinking_progress,
    build_thinking_start,
)


class ThinkCards:
    """Open, beat, summarise and close the turn's think cards, named by the agent's hook name."""

    def __init__(self, cards: CardLedger, output: TurnOutput) -> None:
        self._cards = cards
        self._output = output
        self._by_name: dict[str, str] = {}  # hook name -> the open think card's id
        self._seq = itertools.count(1)
        self._summary: tuple[str, int] | None = None  # the turn's latest progress summary

    def reset(self) -> None:
        """Forget the turn's think cards and summary (the turn began or ended)."""
        self._by_name.clear()
        self._summary = None

    def start(self, name: str) -> str:
        """Open a think card with a fresh id, or adopt the early card of the same ``name``."""
        return self._start(name, early=False)

    def open_early(self, name: str) -> str:
        """:meth:`start`, marked for the agent's own start to adopt."""
        return self._start(name, early=True)

    def _start(self, name: str, *, early: bool) -> str:
        """The card of :meth:`start` (an early card of ``name`` is taken over), marked ``early``."""
        open_id = self._by_name.get(name)
        if open_id is not None and self._cards.get(open_id).early:
            self._cards.get(open_id).early = early
            return open_id
        if self._by_name:
            self.close_all()
        card_id = f"think-{os.urandom(6).hex()}-{next(self._seq)}"  # 12 random hex digits
        self._cards.open(card_id, "think", name).early = early
        self._by_name[name] = card_id
        self._output.submit(build_thinking_start(card_id))
        return card_id

    def heartbeat(self, name: str, elapsed: float | None, status: str | None) -> bool:
        """Update the open card of ``name`` (no card: nothing to update)."""
        card_id = self._by_name.get(name)
        if card_id is None:
            return False
        card = self._cards.get(card_id)
        shown = elapsed if elapsed is not None else self._cards.elapsed(card)
        card.status = status
        self._output.submit(self._progress(card_id, shown, status))
        return True

    def show_summary(self, summary: str, revision: int) -> bool:
        """Remember a newer summary and show it on every open think card now."""
        if self._summary is not None and revision <= self._summary[1]:
            return False
        self._summary = (summary, revision)
        for card_id in self._by_name.values():
            card = self._cards.get(card_id)
            self._output.submit(self._progress(card_id, self._cards.elapsed(card), card.status))
        return True

    def complete(self, name: str, error: str | None = None) -> bool:
        """Close the open card of ``name``: completed, or failed with ``error``."""
        card_id = self._by_name.pop(name, None)
        if card_id is None:
            return False
        elapsed = self._cards.elapsed(self._cards.take(card_id))
        if error:
            self._output.submit(build_thinking_failed(card_id, error, elapsed))
        else:
            self._output.submit(build_thinking_complete(card_id, elapsed))
        return True

    def close_early(self) -> None:
        """Complete an early card the agent never adopted (its hook A failed or never ran)."""
        for name, card_id in list(self._by_name.items()):
            if self._cards.get(card_id).early:
                self.complete(name)

    def close_all(self) -> None:
        """Complete every open think card (a new spinner or a real tool card takes over)."""
        for name in list(self._by_name):
            self.complete(name)

    def _progress(self, card_id: str, elapsed: float, status: str | None) -> ToolCallProgress:
        if self._summary is None:
            return build_thinking_progress(card_id, elapsed, status)
        text, revision = self._summary
        return build_thinking_progress(card_id, elapsed, status, summary=text, summary_revision=revision)
