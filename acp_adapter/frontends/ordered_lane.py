"""One lane for every call into a client connection, so what we add and what the agent sends keep
their order.

In process, the think card we add is opened by a timer (synchronous code) while the agent's own
updates arrive as awaited calls; the client connection's send is a coroutine. If the timer simply
started a task, the agent's next update could reach the connection before our card's start — and
then our close after it, a card closed before it opened. The lane chains every call: each waits for
the one before it to settle, then runs. The agent's calls pay nothing extra when the lane is idle
(the common case): they run at once, and only mark the lane busy while they are in flight.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from acp_adapter.safety.redact import redact_text

__all__ = ["OrderedLane"]

log = logging.getLogger("acp_progress.foreign")

T = TypeVar("T")


async def _settled(future: asyncio.Future[Any]) -> None:
    """Wait for ``future`` to finish, whatever its outcome (its own caller sees its error)."""
    if not future.done():
        await asyncio.wait((future,))


class OrderedLane:
    """Calls into one connection, run strictly in the order they were made."""

    def __init__(self) -> None:
        self._tail: asyncio.Future[Any] | None = None

    def post(self, make: Callable[[], Awaitable[object]]) -> None:
        """Queue a call of ours (from synchronous code: a timer, the watcher). A failure is logged,
        never raised: an update we add must not break the agent's turn."""
        previous = self._tail
        self._tail = asyncio.ensure_future(self._posted(previous, make))

    async def _posted(
        self, previous: asyncio.Future[Any] | None, make: Callable[[], Awaitable[object]]
    ) -> None:
        if previous is not None:
            await _settled(previous)
        try:
            await make()
        except Exception as exc:  # the client is gone or refused it: the agent's own calls will say so
            log.info(
                "an added progress update was not delivered: %s", redact_text(f"{type(exc).__name__}: {exc}")
            )

    async def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Make one of the agent's calls after everything queued before it; its result and errors
        are the caller's."""
        previous = self._tail
        if previous is not None and previous.done():
            previous = None
        mine: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._tail = mine
        try:
            if previous is not None:
                await _settled(previous)
            return await make()
        finally:
            mine.set_result(None)

    async def after_queued(self, make: Callable[[], Awaitable[T]]) -> T:
        """Make a call once everything queued so far went out, without holding the lane while it
        runs: for a request whose answer waits for the person (a permission question), during which
        our heartbeats and other sessions' updates must keep flowing."""
        await self.flush()
        return await make()

    async def flush(self) -> None:
        """Wait until every call queued so far has settled (the prompt's answer waits for this, so
        our card's close reaches the client before it)."""
        while (tail := self._tail) is not None and not tail.done():
            await _settled(tail)
