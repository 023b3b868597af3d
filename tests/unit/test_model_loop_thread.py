"""The model back-end's private event loop shuts down as ``asyncio.run`` does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from acp_adapter.models.base import ModelError
from acp_adapter.models.loop_thread import LoopThread


def test_close_runs_the_finally_of_an_async_generator_left_open_mid_stream() -> None:
    """A stream abandoned mid-way (its consumer raised; a traceback keeps it alive) is closed by
    ``close`` while the loop still runs, so its clean-up (releasing the HTTP response) happens."""
    events: list[str] = []

    async def stream() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            await asyncio.sleep(0)  # a clean-up that needs the loop, like ``response.aclose()``
            events.append("stream closed")

    kept: list[AsyncIterator[int]] = []

    async def consume_one() -> int:
        chunks = stream()
        kept.append(chunks)  # what a traceback's frame would keep alive
        return await anext(chunks)

    thread = LoopThread("test-loop")
    assert thread.submit(consume_one()).result(5) == 1
    assert events == []
    thread.close()
    assert events == ["stream closed"]
    assert thread.closed and not thread._thread.is_alive() and thread.loop.is_closed()
    with pytest.raises(ModelError, match="shut down"):
        thread.submit(consume_one())
    thread.close()  # idempotent
