"""Which cards are open in a session's turn, and which card ids the session has issued.

The think cards and the tool cards of a turn share one table because the turn's end has to close
every card still open, whatever its kind, in the order they opened (no orphan card). A card id is
never reused within a session: a model that repeats a tool-call id gets a suffixed one, so no
update can land on a card that was already closed.

Not thread-safe on its own: :class:`~acp_adapter.agent.turn_state.SessionStream` uses it only under
its one lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

CardKind = Literal["think", "tool"]


@dataclass
class OpenCard:
    """A card that has started and not yet reached its terminal phase."""

    kind: CardKind
    name: str  # a think card's hook name, a tool card's title
    started: float
    status: str | None = None  # a think card's last heartbeat status (repeated with a new summary)
    early: bool = False  # opened by think_open_early and not yet adopted by the agent's start


class CardLedger:
    """The open cards of the current turn, in opening order, and every card id ever claimed."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._open: dict[str, OpenCard] = {}
        self._claimed: set[str] = set()

    def claim_id(self, model_id: str) -> str:
        """A card id for a model tool-call id, unique for the whole session.

        The model's id is used as it comes the first time; a server that reuses ids (``call_1``
        every turn, or twice in one response) gets ``call_1#2``, ``call_1#3`` …"""
        card_id = model_id or "call"
        n = 1
        while card_id in self._claimed:
            n += 1
            card_id = f"{model_id}#{n}"
        self._claimed.add(card_id)
        return card_id

    def open(self, card_id: str, kind: CardKind, name: str) -> OpenCard:
        """Record a card as open from now."""
        card = self._open[card_id] = OpenCard(kind, name, self._clock())
        return card

    def __contains__(self, card_id: str) -> bool:
        return card_id in self._open

    def get(self, card_id: str) -> OpenCard:
        """An open card the caller knows is open (a think card named in its own index)."""
        return self._open[card_id]

    def tool(self, card_id: str) -> OpenCard | None:
        """The open tool card with this id, or ``None`` (never opened, closed, or a think card)."""
        card = self._open.get(card_id)
        return card if card is not None and card.kind == "tool" else None

    def take(self, card_id: str) -> OpenCard:
        """Forget an open card: it is reaching its terminal phase."""
        return self._open.pop(card_id)

    def take_all(self) -> list[tuple[str, OpenCard]]:
        """Forget every open card, returned in the order they opened."""
        cards = list(self._open.items())
        self._open.clear()
        return cards

    def ids(self) -> list[str]:
        """The ids of the open cards, in the order they opened."""
        return list(self._open)

    def elapsed(self, card: OpenCard) -> float:
        """Seconds since the card opened, on the session's clock."""
        return self._clock() - card.started
