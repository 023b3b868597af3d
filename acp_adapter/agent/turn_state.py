"""The per-session turn state machine (no orphan card, nothing after the end).

One lock decides every race between heartbeats (on the loop or a timer thread), tool threads and
turn finalisation: cards open and close here, updates for closed cards or after the turn ended are
dropped, and ``end_turn`` closes whatever is still open. Every accepted update goes to the
connection's :class:`~acp_adapter.agent.outbox.UpdateOutbox` under the lock, so delivery order is
acceptance order.

:class:`SessionStream` is the one thread-safe entry point, and it owns the turn's lifecycle; the
rest is done by collaborators it holds, each called only under its lock: the table of open cards
(:mod:`~acp_adapter.agent.turn_cards`), the think cards (:mod:`~acp_adapter.agent.turn_think`), the
real tool cards (:mod:`~acp_adapter.agent.turn_tools`) and the hand-off of updates and redacted
text to the outbox (:mod:`~acp_adapter.agent.turn_output`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from acp.schema import Cost, ToolCallProgress, ToolCallStart, ToolKind, UsageUpdate

from acp_adapter.agent.outbox import AnyUpdate, UpdateOutbox
from acp_adapter.agent.turn_cards import CardLedger, OpenCard
from acp_adapter.agent.turn_output import TurnOutput
from acp_adapter.agent.turn_think import ThinkCards
from acp_adapter.agent.turn_tools import ProgressReportCheck, ToolCards
from acp_adapter.protocol.meta import ProgressMeta
from acp_adapter.tools import build_thinking_complete, build_thinking_failed, build_tool_failed


def closing_update(
    card_id: str, card: OpenCard, elapsed: float, *, reason: str | None, cancelled: bool
) -> ToolCallProgress:
    """The terminal update of a card the turn's end closes: a think card completes unless the turn
    was cancelled or failed; a tool card always fails (it did not finish)."""
    if card.kind == "think":
        if cancelled or reason:
            return build_thinking_failed(card_id, reason or "Cancelled", elapsed)
        return build_thinking_complete(card_id, elapsed)
    why = reason or ("Cancelled" if cancelled else "The turn ended before the tool finished")
    return build_tool_failed(card_id, why, duration=elapsed)


class SessionStream:
    """The per-session turn state machine (no orphan card, nothing after the end).

    Every public method takes the same lock and submits under it, so the order updates reach the
    outbox is the order the state machine accepted them, and nothing is accepted after a card's
    terminal phase or after the turn ended.
    """

    def __init__(
        self, session_id: str, outbox: UpdateOutbox, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.session_id = session_id
        self.outbox: Final = outbox
        """The connection's ordered path this stream writes to (observers attach there)."""
        self._lock = threading.RLock()
        self._turn_open = False
        self._cards = CardLedger(clock)
        self._output = TurnOutput(session_id, outbox)
        self._think = ThinkCards(self._cards, self._output)
        self._tools = ToolCards(self._cards, self._output, self._think)
        self._check_report = ProgressReportCheck()

    def claim_card_id(self, model_id: str) -> str:
        """A card id for a model tool-call id, unique for the whole session.

        The model's id is used as it comes the first time; a server that reuses ids (``call_1``
        every turn, or twice in one response) gets ``call_1#2``, ``call_1#3`` … so no update ever
        lands on a card that was already closed."""
        with self._lock:
            return self._cards.claim_id(model_id)

    # ------------------------------------------------------------ turn lifecycle

    @property
    def turn_open(self) -> bool:
        return self._turn_open

    @property
    def open_card_ids(self) -> list[str]:
        with self._lock:
            return self._cards.ids()

    def begin_turn(self) -> None:
        with self._lock:
            self._output.begin()
            self._turn_open = True
            self._cards.take_all()
            self._think.reset()

    def end_turn(self, *, reason: str | None = None, cancelled: bool = False) -> int:
        """Close every open card (think: completed unless cancelled/failed; tools: failed) and stop
        accepting updates for this turn. Returns how many cards had to be closed here."""
        with self._lock:
            if not self._turn_open:
                return 0
            self._output.release()
            open_cards = self._cards.take_all()
            for card_id, card in open_cards:
                elapsed = self._cards.elapsed(card)
                self._output.submit(
                    closing_update(card_id, card, elapsed, reason=reason, cancelled=cancelled)
                )
            self._think.reset()
            self._turn_open = False
            return len(open_cards)

    async def flush(self) -> None:
        """Wait until everything this stream submitted so far has been delivered (loop thread)."""
        await self.outbox.flush()

    # ------------------------------------------------------------ free-form updates

    def send(self, update: AnyUpdate) -> bool:
        """Send a non-card update (message/thought chunk, usage) if the turn is still open."""
        with self._lock:
            if not self._turn_open:
                return False
            self._output.submit(update)
            return True

    def send_message_text(self, text: str) -> bool:
        """Stream answer text; redacted with enough held back that no secret is split (see
        :mod:`acp_adapter.safety.redact.stream`)."""
        self.outbox.wait_for_room()  # text that outruns the client is paced, outside the lock
        with self._lock:
            if not self._turn_open or not text:
                return False
            self._think.close_early()  # answer text means the model is done thinking
            self._output.text("message", text)
            return True

    def send_thought_text(self, text: str) -> bool:
        """Stream thought text, redacted the same way as answer text."""
        self.outbox.wait_for_room()
        with self._lock:
            if not self._turn_open or not text:
                return False
            self._output.text("thought", text)
            return True

    def send_usage(self, used: int, size: int, cost: float | None = None) -> bool:
        """The context window's use; ``cost``: the session's cost so far in US dollars, if known."""
        return self.send(
            UsageUpdate(
                session_update="usage_update",
                used=max(0, used),
                size=max(0, size),
                cost=Cost(amount=cost, currency="USD") if cost is not None else None,
            )
        )

    # ------------------------------------------------------------ the think card

    def think_start(self, name: str = "llm_response") -> str | None:
        """Open a think card with a fresh id; closes any think card still open (one at a time).

        A card opened early by :meth:`think_open_early` for the same ``name`` is adopted instead:
        the agent's hook A then continues the spinner the person already sees."""
        with self._lock:
            return self._think.start(name) if self._turn_open else None

    def think_open_early(self, name: str = "llm_response") -> str | None:
        """Open the turn's first think card before the agent loop runs (the server calls this on
        the event loop as the prompt arrives), so the spinner does not wait for the hop to a worker
        thread and the agent's setup. The agent's first ``start`` adopts it; a turn that ends before
        any start closes it like any other card."""
        with self._lock:  # one hold: no start from another thread can slip in before the mark
            return self._think.open_early(name) if self._turn_open else None

    def think_heartbeat(
        self, name: str = "llm_response", elapsed: float | None = None, status: str | None = None
    ) -> bool:
        """Heartbeat without a prior start (or after complete) is a no-op: there is no card to update."""
        with self._lock:
            return self._turn_open and self._think.heartbeat(name, elapsed, status)

    def show_summary(self, summary: str, revision: int) -> bool:
        """A new progress summary for this turn: the open think card shows it now (an extra
        heartbeat), and every later heartbeat of the turn carries it. Never the thought channel.

        Dropped (False) after the turn ended or when the revision is not newer; with no think card
        open it is only remembered for the next one."""
        with self._lock:
            return self._turn_open and self._think.show_summary(summary, revision)

    def think_complete(self, name: str = "llm_response", error: str | None = None) -> bool:
        with self._lock:
            return self._turn_open and self._think.complete(name, error)

    # ------------------------------------------------------------ real tool cards

    def tool_start(
        self,
        tool_call_id: str,
        title: str,
        kind: ToolKind,
        *,
        raw_input: Any = None,
        locations: tuple[str, ...] = (),
        meta: ProgressMeta | Mapping[str, Any] | None = None,
        descriptor: Mapping[str, str] | None = None,
    ) -> bool:
        """Open a real tool card. A think card still open is completed first: no orphan spinner.

        ``descriptor``: a tool's validated presentation descriptor keys (``agh/friendly_verb``,
        ``agh/preview`` of an MCP tool), carried at the top of the start's ``_meta`` so every
        front-end (chat bridges, AG-UI) presents the call as the card does."""
        with self._lock:
            return self._turn_open and self._tools.start(
                tool_call_id,
                title,
                kind,
                raw_input=raw_input,
                locations=locations,
                meta=meta,
                descriptor=descriptor,
            )

    def tool_is_open(self, tool_call_id: str) -> bool:
        with self._lock:
            return self._turn_open and self._tools.is_open(tool_call_id)

    def tool_update(self, tool_call_id: str, update: ToolCallProgress | ToolCallStart) -> bool:
        """Send a non-terminal update for an open tool card; dropped after its terminal phase."""
        with self._lock:
            return self._turn_open and self._tools.update(tool_call_id, update)

    def tool_progress(
        self,
        tool_call_id: str,
        *,
        value: float | None = None,
        total: float | None = None,
        message: str | None = None,
    ) -> bool:
        """Tool-reported progress: empty updates publish nothing; late ones are dropped.

        A value or total that is not a finite number is dropped with a warning naming it, and
        the rest of the report still goes out (a tool's bad arithmetic must not cost its message).
        """
        report = self._check_report(value, total, message)
        if report is None:
            return False
        with self._lock:
            return self._turn_open and self._tools.progress(tool_call_id, report)

    def tool_finish(
        self,
        tool_call_id: str,
        *,
        result_text: str = "",
        error: str | None = None,
        raw_output: Any = None,
        shown: tuple[Any, ...] = (),
    ) -> bool:
        with self._lock:
            return self._turn_open and self._tools.finish(
                tool_call_id, result_text=result_text, error=error, raw_output=raw_output, shown=shown
            )
