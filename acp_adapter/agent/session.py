"""Per-session state: workspace, history, the turn stream and the current turn's cancel signal."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp import RequestError

from acp_adapter.agent.outbox import UpdateOutbox
from acp_adapter.agent.turn_state import SessionStream
from acp_adapter.cancel import CancelToken
from acp_adapter.models.base import Message
from acp_adapter.tooling.calls import ToolCall
from acp_adapter.tooling.toolbox import Toolbox

MAX_HISTORY = 200

log = logging.getLogger("acp_progress.session")


@dataclass
class Session:
    id: str
    cwd: str
    stream: SessionStream
    history: list[Message] = field(default_factory=list)
    cancel: CancelToken | None = None
    toolbox: Toolbox | None = None
    #: the session's MCP servers (an ``acp_adapter.mcp.manager.McpManager``), None without any
    mcp: Any = None
    #: its mode, model and "always" answers (an ``acp_adapter.agent.permissions.SessionPolicy``)
    policy: Any = None
    #: the additional directories the client named (absolute): the tools read and search there
    roots: tuple[str, ...] = ()
    #: what the session's model calls cost so far (US dollars), when the back-end reports it
    cost: float | None = None
    #: resolved when the running prompt has answered (``session/close`` waits for it)
    turn_done: Any = None

    def begin_turn(self) -> CancelToken:
        if self.cancel is not None:
            raise RequestError.invalid_request(
                {
                    "sessionId": self.id,
                    "details": "a prompt is already running in this session; cancel it first",
                }
            )
        self.cancel = CancelToken()  # the turn's ProgressTurn opens the stream
        return self.cancel

    def finish_turn(self, new_messages: list[Message]) -> None:
        self.history.extend(new_messages)
        trim_history(self.history)
        self.cancel = None


def new_session_id() -> str:
    """A fresh session id (unguessable: a client cannot reach another's session by counting)."""
    return f"sess_{uuid.uuid4().hex}"


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


def history_to_json(history: list[Message]) -> list[dict[str, Any]]:
    """The model history as JSON for the session store (the store redacts it on the way in)."""
    out: list[dict[str, Any]] = []
    for m in history:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            item["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in m.tool_calls
            ]
        if m.tool_call_id is not None:
            item["tool_call_id"] = m.tool_call_id
        if m.name is not None:
            item["name"] = m.name
        out.append(item)
    return out


def history_from_json(items: list[dict[str, Any]]) -> list[Message]:
    """The stored model history back as messages; an item this version cannot read is skipped
    (a history that starts mid-turn is trimmed to its first user message by the next turn)."""
    history: list[Message] = []
    for item in items:
        try:
            calls = tuple(
                ToolCall(str(c["id"]), str(c["name"]), dict(c.get("arguments") or {}))
                for c in item.get("tool_calls") or ()
            )
            role = item["role"]
            if role not in ("system", "user", "assistant", "tool"):
                raise ValueError(role)
            history.append(
                Message(
                    role, str(item.get("content") or ""), calls, item.get("tool_call_id"), item.get("name")
                )
            )
        except (KeyError, TypeError, ValueError):
            log.warning("skipped a stored history message this version cannot read")
    return history


class LiveSessions:
    """All sessions of one connection, freed when idle so the process does not grow without bound.

    An editor opens sessions all day and never says it is done with one (ACP has no close), so a
    session unused for ``idle_timeout`` seconds is freed, and beyond ``max_sessions`` the
    longest-unused one is freed to make room. A session with a prompt running is never freed. A
    prompt to a freed session gets a clear invalid-params error that says why and what to do;
    unknown ids get "unknown session id".

    Sessions are kept in least-recently-used order, so a sweep looks only at the expired front.
    """

    def __init__(
        self,
        max_sessions: int = 4096,
        idle_timeout: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self._clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._last_used: dict[str, float] = {}
        self._freed: OrderedDict[str, str] = OrderedDict()  # recently freed id -> why (bounded)
        self._lock = threading.Lock()
        #: called with the id of each session freed (the in-memory store forgets it too, so
        #: memory stays bounded when state is off)
        self.on_free: Callable[[str], None] | None = None

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, cwd: str, outbox: UpdateOutbox) -> Session:
        session_id = new_session_id()
        session = Session(session_id, cwd, SessionStream(session_id, outbox))
        with self._lock:
            now = self._clock()
            self._sweep_locked(now)
            if len(self._sessions) >= self.max_sessions and not self._free_oldest_idle_locked():
                raise RequestError.invalid_request(
                    {
                        "details": f"{len(self._sessions)} sessions are busy running prompts "
                        f"(ACP_PROGRESS_MAX_SESSIONS={self.max_sessions}); retry when one finishes"
                    }
                )
            self._sessions[session_id] = session
            self._last_used[session_id] = now
        return session

    def adopt(self, session_id: str, cwd: str, outbox: UpdateOutbox, history: list[Message]) -> Session:
        """Make a stored session live again under its own id (``session/load``, or a prompt to a
        session this process freed or never had), replacing an idle live copy."""
        session = Session(session_id, cwd, SessionStream(session_id, outbox), history)
        with self._lock:
            now = self._clock()
            self._sweep_locked(now)
            old = self._sessions.get(session_id)
            if old is not None and old.cancel is not None:
                raise RequestError.invalid_request(
                    {
                        "sessionId": session_id,
                        "details": "a prompt is running in this session; cancel it first",
                    }
                )
            if (
                old is None
                and len(self._sessions) >= self.max_sessions
                and not self._free_oldest_idle_locked()
            ):
                raise RequestError.invalid_request(
                    {
                        "details": f"{len(self._sessions)} sessions are busy running prompts; "
                        "retry when one finishes"
                    }
                )
            self._sessions[session_id] = session
            self._freed.pop(session_id, None)
            self._touch_locked(session_id, now)
        return session

    def get(self, session_id: str) -> Session:
        """The session for a prompt (marks it used). Freed and unknown ids raise clear errors."""
        with self._lock:
            now = self._clock()
            self._sweep_locked(now)
            session = self._sessions.get(session_id)
            if session is None:
                why = self._freed.get(session_id)
                details = (
                    f"this session was freed ({why}); open a new session with session/new"
                    if why
                    else "unknown session id"
                )
                raise RequestError.invalid_params({"sessionId": session_id, "details": details})
            self._touch_locked(session_id, now)
            return session

    def touch(self, session_id: str) -> None:
        """Mark a session used now (a prompt just finished in it)."""
        with self._lock:
            if session_id in self._sessions:
                self._touch_locked(session_id, self._clock())

    def all(self) -> list[Session]:
        with self._lock:
            return list(self._sessions.values())

    def find(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def close(self, session_id: str) -> bool:
        with self._lock:
            self._last_used.pop(session_id, None)
            return self._sessions.pop(session_id, None) is not None

    # ------------------------------------------------------------ internals (lock held)

    def _touch_locked(self, session_id: str, now: float) -> None:
        self._last_used[session_id] = now
        self._sessions.move_to_end(session_id)

    def _free_locked(self, session_id: str, why: str) -> None:
        self._sessions.pop(session_id, None)
        self._last_used.pop(session_id, None)
        self._freed[session_id] = why
        while len(self._freed) > _FREED_MEMORY:
            self._freed.popitem(last=False)
        log.info("freed session %s (%s)", session_id, why)
        if self.on_free is not None:
            try:
                self.on_free(session_id)
            except Exception:
                log.exception("forgetting freed session %s failed", session_id)

    def _sweep_locked(self, now: float) -> int:
        expired: list[str] = []
        for session_id, session in self._sessions.items():
            if now - self._last_used[session_id] <= self.idle_timeout:
                break  # least recently used first: the rest are fresher
            if session.cancel is None:  # no prompt running
                expired.append(session_id)
        for session_id in expired:
            self._free_locked(session_id, f"unused for more than {self.idle_timeout:g} s")
        return len(expired)

    def _free_oldest_idle_locked(self) -> bool:
        for session_id, session in self._sessions.items():
            if session.cancel is None:
                self._free_locked(session_id, f"the agent keeps at most {self.max_sessions} sessions")
                return True
        return False


#: How many freed session ids are remembered, to tell "freed" from "unknown" in the error.
_FREED_MEMORY = 10_000
