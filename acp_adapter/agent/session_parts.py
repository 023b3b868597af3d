"""What the session methods work on, handed over explicitly: the live sessions, the session store
and its writer, the recorder, the MCP servers, the session configuration and the outbox.

:class:`~acp_adapter.agent.session_opening.SessionOpening` (new, load, resume, fork, the bring-back
for a prompt) and :class:`~acp_adapter.agent.session_roster.SessionRoster` (list, close, delete,
the store flush) share one set, so a session made live by one is found, closed and forgotten by the
other through the same parts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_adapter.agent.outbox import UpdateOutbox
    from acp_adapter.agent.session import LiveSessions
    from acp_adapter.agent.session_mcp import SessionServers
    from acp_adapter.agent.session_options import SessionOptions
    from acp_adapter.store import BackgroundWriter, SessionStore
    from acp_adapter.store.recorder import ConversationRecorder

__all__ = ["BUSY", "SessionParts"]

#: why a method that needs a session at rest refuses one whose prompt is running
BUSY = "a prompt is running in this session; cancel it first"


@dataclass(frozen=True)
class SessionParts:
    """The agent's parts a session method uses (nothing borrowed: each is named here)."""

    sessions: LiveSessions
    store: SessionStore
    writer: BackgroundWriter
    recorder: ConversationRecorder
    mcp: SessionServers
    options: SessionOptions
    #: the connection's outbox, made on first use on the running loop
    outbox: Callable[[], UpdateOutbox]
    #: the outbox if it was made, else None: forgetting a session never makes one (an outbox not
    #: made yet has nothing of the session to forget)
    made_outbox: Callable[[], UpdateOutbox | None]

    def let_go(self, session_id: str) -> None:
        """A live session closed, deleted or given up mid-load: no longer live, and forgotten."""
        self.sessions.close(session_id)
        self.forget(session_id)

    def forget(self, session_id: str) -> None:
        """A session no longer live (closed, or freed for idleness by the live sessions
        themselves): not recorded any more, and its outbox observers (a summary's) dropped."""
        self.recorder.forget(session_id)
        outbox = self.made_outbox()
        if outbox is not None:
            outbox.forget_observers(session_id)
