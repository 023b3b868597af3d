"""Callback factories: the plain agent callbacks, adapted to a session's update stream.

This module holds the callbacks; the ordered delivery path lives in :mod:`acp_adapter.agent.outbox`
and the turn state machine in :mod:`acp_adapter.agent.turn_state`, both re-exported here so
``acp_adapter.events`` imports keep working. New code should use
:class:`acp_adapter.agent.turn.ProgressTurn`, which hands out all of these callbacks for one turn and
always ends it; the factories below serve agents written against the plain
``make_agent_progress_cb(conn, session_id, loop)`` form and share the same per-session stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from acp_adapter.agent.outbox import AnyUpdate, SessionUpdateSink, UpdateOutbox, shared_outbox
from acp_adapter.agent.turn import AgentProgressCallback, ProgressTurn, progress_callback, session_stream
from acp_adapter.agent.turn_state import SessionStream
from acp_adapter.protocol.observer import UpdateObserver

__all__ = [
    "AgentProgressCallback",
    "AnyUpdate",
    "ProgressTurn",
    "SessionStream",
    "SessionUpdateSink",
    "UpdateObserver",
    "UpdateOutbox",
    "make_agent_progress_cb",
    "make_message_cb",
    "make_thinking_cb",
    "shared_outbox",
]


def _begun(conn: SessionUpdateSink, session_id: str, loop: asyncio.AbstractEventLoop) -> SessionStream:
    """The session's shared stream, accepting updates (a turn is begun if none is open)."""
    stream = session_stream(conn, session_id, loop)
    if not stream.turn_open:
        stream.begin_turn()
    return stream


def make_agent_progress_cb(
    conn: SessionUpdateSink,
    session_id: str,
    loop: asyncio.AbstractEventLoop,
    *,
    stream: SessionStream | None = None,
) -> AgentProgressCallback:
    """The plain ``agent_progress_callback(state, name, args=None)`` an agent loop calls.

    ``start`` opens a think card with a fresh id, ``heartbeat`` updates it with ``args["elapsed"]``
    (and ``args["status"]``), ``complete`` closes it (``failed`` when ``args["error"]`` is set).
    Heartbeat or complete without a start is a no-op. Without ``stream`` the session's shared
    stream on ``conn`` is used (see :func:`~acp_adapter.agent.turn.session_stream`): one ordered path
    with the other callbacks of that session. Only a :class:`~acp_adapter.agent.turn.ProgressTurn`
    ends a turn (closing open cards); prefer it for new code.
    """
    return progress_callback(stream or _begun(conn, session_id, loop))


def make_thinking_cb(
    conn: SessionUpdateSink,
    session_id: str,
    loop: asyncio.AbstractEventLoop,
    *,
    stream: SessionStream | None = None,
) -> Callable[[str], bool]:
    """``thinking_callback(text)`` → ``agent_thought_chunk`` (redacted)."""
    return (stream or _begun(conn, session_id, loop)).send_thought_text


def make_message_cb(
    conn: SessionUpdateSink,
    session_id: str,
    loop: asyncio.AbstractEventLoop,
    *,
    stream: SessionStream | None = None,
) -> Callable[[str], bool]:
    """``message_callback(text)`` → ``agent_message_chunk`` (redacted)."""
    return (stream or _begun(conn, session_id, loop)).send_message_text
