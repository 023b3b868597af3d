"""Per-session state: workspace, history, the turn stream and the current turn's cancel signal."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field

from acp import RequestError

from .cancel import CancelToken
from .events import SessionStream, UpdateOutbox
from .models.base import Message
from .toolbox import Toolbox

__all__ = ["MAX_HISTORY", "Session", "SessionStore", "trim_history"]

MAX_HISTORY = 200


@dataclass
class Session:
    id: str
    cwd: str
    stream: SessionStream
    history: list[Message] = field(default_factory=list)
    cancel: CancelToken | None = None
    toolbox: Toolbox | None = None

    def begin_turn(self) -> CancelToken:
        if self.cancel is not None:
            raise RequestError.invalid_request(
                {
                    "sessionId": self.id,
                    "details": "a prompt is already running in this session; cancel it first",
                }
            )
        self.cancel = CancelToken()
        self.stream.begin_turn()
        return self.cancel

    def finish_turn(self, new_messages: list[Message]) -> None:
        self.history.extend(new_messages)
        trim_history(self.history)
        self.cancel = None


def trim_history(history: list[Message], limit: int = MAX_HISTORY) -> None:
    """Keep at most about ``limit`` messages, dropping whole turns from the front, in place.

    Cutting by message count could leave a ``tool`` result whose assistant ``tool_calls`` message
    was cut, and OpenAI-compatible servers answer HTTP 400 to every later prompt of a session
    with such a history. A turn starts at a ``user`` message, so the kept history starts at the
    first user message inside the last ``limit`` messages; a single turn longer than ``limit`` is
    kept whole (its tool-call pairs intact) rather than cut in the middle.
    """
    if len(history) <= limit:
        return
    starts = [i for i, m in enumerate(history) if m.role == "user"]
    if not starts:
        return
    cut = next((i for i in starts if i >= len(history) - limit), starts[-1])
    del history[:cut]


class SessionStore:
    """All sessions of one connection. Lookups of unknown ids raise a clear invalid-params error."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, cwd: str, outbox: UpdateOutbox) -> Session:
        session_id = f"sess_{uuid.uuid4().hex}"
        session = Session(session_id, cwd, SessionStream(session_id, outbox))
        with self._lock:
            self._sessions[session_id] = session
        return session

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id, "details": "unknown session id"})
        return session

    def all(self) -> list[Session]:
        with self._lock:
            return list(self._sessions.values())

    def find(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def close(self, session_id: str) -> bool:
        with self._lock:
            return self._sessions.pop(session_id, None) is not None
