"""The hand-off of one session's accepted updates to the connection's outbox.

Streamed text is redacted as it arrives, so each channel holds back just enough that no secret is
split across chunks (:mod:`acp_adapter.safety.redact.stream`). Whatever is held back must still
reach the client before anything that follows it, or the transcript reads out of order: every card
or usage update first releases the held text. A message is one uninterrupted run of one channel's
text, so any other update ends it and later text starts a new ``messageId``.

Not thread-safe on its own: :class:`~acp_adapter.agent.turn_state.SessionStream` calls it only under
its one lock, which is what makes delivery order the order updates were accepted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from acp import update_agent_message_text, update_agent_thought_text
from acp.schema import AgentMessageChunk, AgentThoughtChunk

from acp_adapter.agent.outbox import AnyUpdate, UpdateBuild, UpdateOutbox

if TYPE_CHECKING:
    from acp_adapter.safety.redact.stream import StreamRedactor

TextChannel = Literal["message", "thought"]
"""The two streams of text a turn sends: the answer and the model's thoughts."""

_TEXT_UPDATE: dict[TextChannel, Callable[[str], AgentMessageChunk | AgentThoughtChunk]] = {
    "message": update_agent_message_text,
    "thought": update_agent_thought_text,
}


def new_message_id() -> str:
    """A fresh ``messageId``: every chunk of one message carries it, a new one starts a new message."""
    return f"msg_{uuid.uuid4().hex}"


def _new_text_redactors() -> dict[TextChannel, StreamRedactor]:
    # imported with the first turn: a session that never prompts compiles no redaction pattern
    from acp_adapter.safety.redact.stream import StreamRedactor

    return {channel: StreamRedactor() for channel in _TEXT_UPDATE}


class TurnOutput:
    """One session's writer to the outbox: held-back text first, then the update, in order."""

    def __init__(self, session_id: str, outbox: UpdateOutbox) -> None:
        self._session_id = session_id
        self._outbox = outbox
        #: a turn's own, made with its first text (a turn's first card has none to release)
        self._held: dict[TextChannel, StreamRedactor] = {}
        #: the message each text channel is streaming (its ``messageId``)
        self._message_ids: dict[TextChannel, str] = {}

    def begin(self) -> None:
        """A new turn: nothing held back from the last one carries over (its first text makes
        fresh redactors)."""
        self._held = {}
        self._message_ids.clear()

    def submit(self, update: AnyUpdate) -> None:
        """Submit a card/usage update; text held back goes out first and the messages end."""
        if self._held:  # none before the turn's first text (its first card)
            self.release()
        self._message_ids.clear()
        self._outbox.submit(self._session_id, update)

    def submit_progress(
        self,
        card_id: str,
        build: UpdateBuild,
        fold: Callable[[UpdateBuild, UpdateBuild], UpdateBuild] | None = None,
    ) -> None:
        """Submit a card's progress, held text first; it replaces (or, with ``fold``, is folded
        into) the card's progress still queued
        (:meth:`~acp_adapter.agent.outbox.UpdateOutbox.submit_latest`)."""
        self.release()
        self._outbox.submit_latest(self._session_id, (self._session_id, card_id, "progress"), build, fold)

    def text(self, channel: TextChannel, text: str) -> None:
        """Stream a channel's text: the other channel's held text is released (its message ends)
        and only what is safe to show so far goes out, as a chunk of this channel's message."""
        if not self._held:
            self._held = _new_text_redactors()
        self.release(keep=channel)
        if safe := self._held[channel].feed(text):
            self._outbox.submit(self._session_id, self._chunk(channel, safe))

    def release(self, keep: TextChannel | None = None) -> None:
        """Release text held back for redaction (except channel ``keep``, whose message goes on;
        the others' messages end), in channel order."""
        for channel, redactor in self._held.items():
            if channel == keep:
                continue
            if rest := redactor.flush():
                self._outbox.submit(self._session_id, self._chunk(channel, rest))
            self._message_ids.pop(channel, None)

    def _chunk(self, channel: TextChannel, text: str) -> AgentMessageChunk | AgentThoughtChunk:
        """A chunk of the channel's current message (a new message id when none is streaming)."""
        message_id = self._message_ids.get(channel)
        if message_id is None:
            message_id = self._message_ids[channel] = new_message_id()
        return _TEXT_UPDATE[channel](text).model_copy(update={"message_id": message_id})
