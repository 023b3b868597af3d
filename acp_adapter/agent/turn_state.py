"""The per-session turn state machine (no orphan card, nothing after the end).

One lock decides every race between heartbeats (on the loop or a timer thread), tool threads and
turn finalisation: cards open and close here, updates for closed cards or after the turn ended are
dropped, and ``end_turn`` closes whatever is still open. Every accepted update goes to the connection's
:class:`~acp_adapter.agent.outbox.UpdateOutbox` under the lock, so delivery order is acceptance order.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acp import update_agent_message_text, update_agent_thought_text
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    Cost,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
    UsageUpdate,
)

from acp_adapter.agent.outbox import AnyUpdate, UpdateOutbox
from acp_adapter.protocol.meta import ProgressMeta
from acp_adapter.tools import (
    build_thinking_complete,
    build_thinking_failed,
    build_thinking_progress,
    build_thinking_start,
    build_tool_complete,
    build_tool_failed,
    build_tool_progress,
    build_tool_start,
    progress_number,
)

if TYPE_CHECKING:
    from acp_adapter.safety.redact.stream import StreamRedactor

log = logging.getLogger("acp_progress.turn_state")


_TEXT_UPDATE: dict[str, Callable[[str], AgentMessageChunk | AgentThoughtChunk]] = {
    "message": update_agent_message_text,
    "thought": update_agent_thought_text,
}


def new_message_id() -> str:
    """A fresh ``messageId``: every chunk of one message carries it, a new one starts a new message."""
    return f"msg_{uuid.uuid4().hex}"


def _new_text_redactors() -> dict[str, StreamRedactor]:
    # imported with the first turn: a session that never prompts compiles no redaction pattern
    from acp_adapter.safety.redact.stream import StreamRedactor

    return {channel: StreamRedactor() for channel in _TEXT_UPDATE}


@dataclass
class _Card:
    kind: str  # "think" or "tool"
    name: str
    started: float
    status: str | None = None  # a think card's last heartbeat status (repeated with a new summary)
    early: bool = False  # opened by think_open_early and not yet adopted by the agent's start


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
        self._outbox = outbox
        self._clock = clock
        self._lock = threading.RLock()
        self._turn_open = False
        self._cards: dict[str, _Card] = {}
        self._think_by_name: dict[str, str] = {}
        self._seq = itertools.count(1)
        self._held_text: dict[str, StreamRedactor] = {}  # a turn's own, made by begin_turn
        #: the message each text channel is streaming (its ``messageId``): a message is one
        #: uninterrupted run of one channel's text, so any other update ends it
        self._message_ids: dict[str, str] = {}
        self._claimed_ids: set[str] = set()
        self._summary: tuple[str, int] | None = None  # the turn's latest progress summary
        #: kinds of bad progress input already warned about (a tool in a loop must not flood the log)
        self._progress_warnings: set[str] = set()

    def claim_card_id(self, model_id: str) -> str:
        """A card id for a model tool-call id, unique for the whole session.

        The model's id is used as it comes the first time; a server that reuses ids (``call_1``
        every turn, or twice in one response) gets ``call_1#2``, ``call_1#3`` … so no update ever
        lands on a card that was already closed."""
        with self._lock:
            card_id = model_id or "call"
            n = 1
            while card_id in self._claimed_ids:
                n += 1
                card_id = f"{model_id}#{n}"
            self._claimed_ids.add(card_id)
            return card_id

    # ------------------------------------------------------------ turn lifecycle

    @property
    def outbox(self) -> UpdateOutbox:
        """The connection's ordered path this stream writes to (observers attach there)."""
        return self._outbox

    @property
    def turn_open(self) -> bool:
        return self._turn_open

    @property
    def open_card_ids(self) -> list[str]:
        with self._lock:
            return list(self._cards)

    def begin_turn(self) -> None:
        with self._lock:
            self._held_text = _new_text_redactors()
            self._message_ids.clear()
            self._turn_open = True
            self._cards.clear()
            self._think_by_name.clear()
            self._summary = None

    def end_turn(self, *, reason: str | None = None, cancelled: bool = False) -> int:
        """Close every open card (think: completed unless cancelled/failed; tools: failed) and stop
        accepting updates for this turn. Returns how many cards had to be closed here."""
        with self._lock:
            if not self._turn_open:
                return 0
            self._flush_text_locked()
            closed = 0
            for card_id, card in list(self._cards.items()):
                elapsed = self._clock() - card.started
                if card.kind == "think":
                    if cancelled or reason:
                        self._submit(build_thinking_failed(card_id, reason or "Cancelled", elapsed))
                    else:
                        self._submit(build_thinking_complete(card_id, elapsed))
                else:
                    why = reason or ("Cancelled" if cancelled else "The turn ended before the tool finished")
                    self._submit(build_tool_failed(card_id, why, duration=elapsed))
                closed += 1
            self._cards.clear()
            self._think_by_name.clear()
            self._turn_open = False
            self._summary = None
            return closed

    async def flush(self) -> None:
        """Wait until everything this stream submitted so far has been delivered (loop thread)."""
        await self._outbox.flush()

    def _submit(self, update: AnyUpdate) -> None:
        """Submit a card/usage update; streamed text held back for redaction goes out first, and
        the messages being streamed end (text after this update is a new message)."""
        self._flush_text_locked()
        self._message_ids.clear()
        self._outbox.submit(self.session_id, update)

    def _flush_text_locked(self, keep: str | None = None) -> None:
        """Release text held back for redaction (except channel ``keep``, whose message goes on;
        the others' messages end), in channel order."""
        for channel, redactor in self._held_text.items():
            if channel == keep:
                continue
            if rest := redactor.flush():
                self._outbox.submit(self.session_id, self._text_update(channel, rest))
            self._message_ids.pop(channel, None)

    def _text_update(self, channel: str, text: str) -> AgentMessageChunk | AgentThoughtChunk:
        """A chunk of the channel's current message (a new message id when none is streaming)."""
        message_id = self._message_ids.get(channel)
        if message_id is None:
            message_id = self._message_ids[channel] = new_message_id()
        return _TEXT_UPDATE[channel](text).model_copy(update={"message_id": message_id})

    def _send_text(self, channel: str, text: str) -> bool:
        self._outbox.wait_for_room()  # text that outruns the client is paced, outside the lock
        with self._lock:
            if not self._turn_open or not text:
                return False
            if channel == "message":
                self._close_early_locked()  # answer text means the model is done thinking
            self._flush_text_locked(keep=channel)  # switching channels releases the other's text
            if safe := self._held_text[channel].feed(text):
                self._outbox.submit(self.session_id, self._text_update(channel, safe))
            return True

    # ------------------------------------------------------------ free-form updates

    def send(self, update: AnyUpdate) -> bool:
        """Send a non-card update (message/thought chunk, usage) if the turn is still open."""
        with self._lock:
            if not self._turn_open:
                return False
            self._submit(update)
            return True

    def send_message_text(self, text: str) -> bool:
        """Stream answer text; redacted with enough held back that no secret is split (see
        :mod:`acp_adapter.safety.redact.stream`)."""
        return self._send_text("message", text)

    def send_thought_text(self, text: str) -> bool:
        """Stream thought text, redacted the same way as answer text."""
        return self._send_text("thought", text)

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
            if not self._turn_open:
                return None
            early = self._think_by_name.get(name)
            if early is not None and self._cards[early].early:
                self._cards[early].early = False
                return early
            self._close_thinking_locked()
            card_id = f"think-{uuid.uuid4().hex[:12]}-{next(self._seq)}"
            self._cards[card_id] = _Card("think", name, self._clock())
            self._think_by_name[name] = card_id
            self._submit(build_thinking_start(card_id))
            return card_id

    def think_open_early(self, name: str = "llm_response") -> str | None:
        """Open the turn's first think card before the agent loop runs (the server calls this on
        the event loop as the prompt arrives), so the spinner does not wait for the hop to a worker
        thread and the agent's setup. The agent's first ``start`` adopts it; a turn that ends before
        any start closes it like any other card."""
        with self._lock:  # one hold: no start from another thread can slip in before the mark
            card_id = self.think_start(name)
            if card_id is not None:
                self._cards[card_id].early = True
            return card_id

    def think_heartbeat(
        self, name: str = "llm_response", elapsed: float | None = None, status: str | None = None
    ) -> bool:
        """Heartbeat without a prior start (or after complete) is a no-op: there is no card to update."""
        with self._lock:
            card_id = self._think_by_name.get(name)
            if not self._turn_open or card_id is None:
                return False
            card = self._cards[card_id]
            shown = elapsed if elapsed is not None else self._clock() - card.started
            card.status = status
            self._submit(self._think_progress_locked(card_id, shown, status))
            return True

    def _think_progress_locked(self, card_id: str, elapsed: float, status: str | None) -> ToolCallProgress:
        if self._summary is None:
            return build_thinking_progress(card_id, elapsed, status)
        text, revision = self._summary
        return build_thinking_progress(card_id, elapsed, status, summary=text, summary_revision=revision)

    def show_summary(self, summary: str, revision: int) -> bool:
        """A new progress summary for this turn: the open think card shows it now (an extra
        heartbeat), and every later heartbeat of the turn carries it. Never the thought channel.

        Dropped (False) after the turn ended or when the revision is not newer; with no think card
        open it is only remembered for the next one."""
        with self._lock:
            if not self._turn_open or (self._summary is not None and revision <= self._summary[1]):
                return False
            self._summary = (summary, revision)
            now = self._clock()
            for card_id in self._think_by_name.values():
                card = self._cards[card_id]
                self._submit(self._think_progress_locked(card_id, now - card.started, card.status))
            return True

    def think_complete(self, name: str = "llm_response", error: str | None = None) -> bool:
        with self._lock:
            card_id = self._think_by_name.pop(name, None)
            if not self._turn_open or card_id is None:
                return False
            card = self._cards.pop(card_id)
            elapsed = self._clock() - card.started
            if error:
                self._submit(build_thinking_failed(card_id, error, elapsed))
            else:
                self._submit(build_thinking_complete(card_id, elapsed))
            return True

    def _close_early_locked(self) -> None:
        """Complete an early card the agent never adopted (its hook A failed or never ran)."""
        for name, card_id in list(self._think_by_name.items()):
            if self._cards[card_id].early:
                self.think_complete(name)

    def _close_thinking_locked(self) -> None:
        for name in list(self._think_by_name):
            self.think_complete(name)

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
            if not self._turn_open or tool_call_id in self._cards:
                return False
            self._close_thinking_locked()
            self._cards[tool_call_id] = _Card("tool", title, self._clock())
            update = build_tool_start(
                tool_call_id, title, kind, raw_input=raw_input, locations=locations, meta=meta
            )
            if descriptor:
                merged = {**descriptor, **(update.field_meta or {})}
                update = update.model_copy(update={"field_meta": merged})
            self._submit(update)
            return True

    def tool_is_open(self, tool_call_id: str) -> bool:
        with self._lock:
            card = self._cards.get(tool_call_id)
            return self._turn_open and card is not None and card.kind == "tool"

    def tool_update(self, tool_call_id: str, update: ToolCallProgress | ToolCallStart) -> bool:
        """Send a non-terminal update for an open tool card; dropped after its terminal phase."""
        with self._lock:
            if not self.tool_is_open(tool_call_id):
                return False
            self._submit(update)
            return True

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
        value, total = self._checked_number("value", value), self._checked_number("total", total)
        if message is not None and not isinstance(message, str):
            self._warn_once(f"the message must be text, not {type(message).__name__}; it is left out")
            message = None
        if value is None and total is None and not message:
            return False
        with self._lock:
            if not self.tool_is_open(tool_call_id):
                return False
            # built on the loop (a busy tool reports thousands a second), and replacing this card's
            # progress still queued: a slow client never makes the tool wait, and gets the newest
            self._flush_text_locked()
            self._outbox.submit_latest(
                self.session_id,
                (self.session_id, tool_call_id, "progress"),
                functools.partial(
                    build_tool_progress, tool_call_id, value=value, total=total, message=message
                ),
            )
            return True

    def _checked_number(self, field: str, value: object) -> float | None:
        try:
            return progress_number(field, value)
        except ValueError as exc:
            self._warn_once(f"{exc}; the field is left out")
            return None

    def _warn_once(self, problem: str) -> None:
        """Warn about a kind of bad progress input the first time this session's tools send it."""
        if problem not in self._progress_warnings and len(self._progress_warnings) < 64:
            self._progress_warnings.add(problem)
            log.warning("tool progress: %s", problem)

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
            card = self._cards.get(tool_call_id)
            if not self._turn_open or card is None or card.kind != "tool":
                return False
            del self._cards[tool_call_id]
            duration = self._clock() - card.started
            if error is not None:
                self._submit(
                    build_tool_failed(
                        tool_call_id,
                        error,
                        duration=duration,
                        text=result_text,
                        raw_output=raw_output,
                        shown=shown,
                    )
                )
            else:
                self._submit(
                    build_tool_complete(
                        tool_call_id, result_text, raw_output=raw_output, duration=duration, shown=shown
                    )
                )
            return True
