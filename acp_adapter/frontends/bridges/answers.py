"""The turn's answer text in the chat: held while it streams, posted in chunks that fit.

Answer text arrives as cumulative snapshots of a segment; a segment is posted when it closes (a
later segment, a tool, a thought, the turn's end), after the last progress edit has landed. With a
:class:`~.state.BridgeState` the chunks go through its durable outbox: every chunk is stored before
the first is sent, and a chunk whose delivery is uncertain is never sent twice.
"""

from __future__ import annotations

import logging
from typing import Any

from acp_adapter.frontends.bridges.bubbles import EditBudget
from acp_adapter.frontends.bridges.events import AnswerText
from acp_adapter.frontends.bridges.retry import DeliveryDropped
from acp_adapter.frontends.bridges.sink import ChatSink, SendOutcomeUnknown, split_to_fit
from acp_adapter.frontends.bridges.sink_calls import SinkCalls
from acp_adapter.frontends.bridges.state import BridgeState, unsure_note
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.bridges.delivery")


class PendingAnswer:
    """The route's answer segment not posted yet, and whether the running turn has answered."""

    def __init__(self, calls: SinkCalls, edits: EditBudget, state: BridgeState | None, chat: Any) -> None:
        self._calls = calls
        self._edits = edits
        #: the durable outbox answers go through (None: posted directly, nothing kept)
        self._state = state
        self._chat = chat
        self._segment: int | None = None
        self._text = ""
        #: the turn has said something final (an answer, an error, the stop line)
        self.answered = False

    def begin_turn(self) -> None:
        self.answered = False

    def mark_answered(self) -> None:
        """Something else said the turn's last word (an error, the stop line)."""
        self.answered = True

    async def hold(self, event: AnswerText) -> None:
        """A newer snapshot of the answer: a new segment first posts the one before it."""
        if self._segment is not None and event.segment != self._segment:
            await self.post()
        self._segment = event.segment
        self._text = event.text

    async def post(self) -> None:
        """Post the held segment (nothing held: nothing to do)."""
        if self._segment is None:
            return
        text = self._text
        self._segment = None
        self._text = ""
        if not text.strip():
            return
        await self._edits.flush(force=True)  # the last progress edit lands before the answer
        sink, stats = self._calls.sink, self._calls.stats
        chunks = split_to_fit(redact_text(text), sink.limit, sink.measure)
        if self._state is None:
            for chunk in chunks:
                await self._calls.post(chunk)
        else:  # durable outbox: every chunk stored before the first is sent
            keys = [self._state.outbox_add(self._chat, chunk) for chunk in chunks]
            for key, chunk in zip(keys, chunks, strict=True):
                stats.posts += 1
                if not await send_chunk(sink, self._state, key, chunk):
                    stats.failures += 1
        self.answered = True


async def send_chunk(sink: ChatSink, state: BridgeState, key: str, text: str) -> bool:
    """Send one stored answer chunk through the outbox; True once the platform confirmed it.

    Marked ``sending`` before the call (a crash during it leaves ``sending``: outcome unknown),
    removed once confirmed. A send whose outcome is unknown (a timeout) is *marked*, never sent
    again: the chat may already show it, so instead of a possible duplicate it gets one short
    notice quoting the chunk's start (:func:`~.state.unsure_note`), and the person can tell whether
    that part arrived. A send the platform refused (or dropped) stays stored (``failed``) and is
    tried again after a restart.
    """
    state.outbox_mark(key, "sending")
    try:
        await sink.post(text, exactly_once=True)
    except SendOutcomeUnknown as exc:
        state.outbox_mark(key, "unknown")
        log.warning("answer chunk %s: outcome unknown (%s); marked, not sent again", key, exc)
        await _settle_unknown(sink, state, key, text)
        return False
    except DeliveryDropped as exc:
        state.outbox_mark(key, "failed")
        log.info("answer chunk %s dropped: %s; kept for the next start", key, exc)
        return False
    except Exception as exc:
        state.outbox_mark(key, "failed")
        log.warning("answer chunk %s not sent: %s; kept for the next start", key, redact_text(str(exc)))
        return False
    state.outbox_sent(key)
    return True


async def _settle_unknown(sink: ChatSink, state: BridgeState, key: str, text: str) -> None:
    """A chunk whose delivery nobody can confirm: say so once in the chat, then let it go."""
    try:
        await sink.post(unsure_note(text))
    except Exception as exc:  # the notice is a courtesy: its own failure loses nothing more
        log.warning("could not post the unsure-delivery notice: %s", redact_text(str(exc))[:200])
    state.outbox_sent(key)


async def flush_outbox(sink: ChatSink, state: BridgeState, chat: Any) -> int:
    """After a restart: send the chat's stored answer chunks, oldest first; returns how many went.

    ``pending``/``failed`` chunks were never shown and go as they are; ``sending``/``unknown`` ones
    may have been shown, so they are not sent again: the chat gets the unsure-delivery notice."""
    sent = 0
    for entry in state.outbox(chat):
        if entry.state in ("sending", "unknown"):
            await _settle_unknown(sink, state, entry.key, entry.text)
        elif await send_chunk(sink, state, entry.key, entry.text):
            sent += 1
    return sent
