"""A connection keeps a bounded number of session streams: an embedder's agent that serves
sessions for days on one connection must not keep a stream for every session it ever saw, and a
stream whose turn is open is never let go (its cards close on the stream that opened them)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from acp_adapter.agent.turn import MAX_STREAMS_PER_CONNECTION, session_stream

pytestmark = pytest.mark.anyio


class _Sink:
    """A connection that takes every update (only the streams' bookkeeping is looked at)."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))


async def test_past_the_bound_the_least_recently_used_idle_streams_are_let_go() -> None:
    conn, loop = _Sink(), asyncio.get_running_loop()
    busy = session_stream(conn, "busy", loop)
    busy.begin_turn()  # a turn still running: never let go however old
    recent = session_stream(conn, "s0", loop)
    for n in range(1, MAX_STREAMS_PER_CONNECTION * 3):
        session_stream(conn, f"s{n}", loop)
        if n % 50 == 0:
            assert session_stream(conn, "s0", loop) is recent  # used again: kept
    from acp_adapter.agent.turn import _STREAMS

    streams = _STREAMS.get(conn, dict)
    assert len(streams) == MAX_STREAMS_PER_CONNECTION
    assert streams["busy"] is busy
    assert session_stream(conn, "busy", loop) is busy
    assert "s1" not in streams  # the oldest idle one went first
    newest = f"s{MAX_STREAMS_PER_CONNECTION * 3 - 1}"
    assert newest in streams
    busy.end_turn()


async def test_within_the_bound_a_session_keeps_its_stream() -> None:
    conn, loop = _Sink(), asyncio.get_running_loop()
    first = {f"s{n}": session_stream(conn, f"s{n}", loop) for n in range(MAX_STREAMS_PER_CONNECTION)}
    for sid, stream in first.items():
        assert session_stream(conn, sid, loop) is stream
