"""Awaiting a turn's work through the cancellation of the task that awaits it.

The SDK runs each request in a plain asyncio task; when the client hangs up the task is cancelled,
but the turn's worker thread must still end cleanly (every card closed, nothing left running), so
its prompt awaits through the cancellation — unless the agent has given the turn up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

__all__ = ["await_through_cancel"]

T = TypeVar("T")


async def await_through_cancel(
    future: asyncio.Future[T],
    on_cancel: Callable[[], None] = lambda: None,
    give_up: Callable[[], bool] = lambda: False,
) -> tuple[T | None, BaseException | None, bool]:
    """Await ``future`` to its end even if the awaiting task is cancelled meanwhile.

    Returns ``(result, error, interrupted)`` and never raises: a cancellation of the awaiting task
    (the connection went away) calls ``on_cancel`` once and keeps waiting, so no worker outlives
    its turn, every card is closed and ``CancelledError`` never escapes ``prompt``. Plain asyncio
    here because the SDK's connection tasks are plain asyncio tasks.

    The one exception is ``give_up()``: once the agent abandons its turns (the client hung up
    and the grace period is over), a cancellation returns at once, so a turn that ignores its
    cancel signal cannot keep the process alive.
    """
    interrupted = False
    while True:
        try:
            return await asyncio.shield(future), None, interrupted
        except asyncio.CancelledError:
            if future.cancelled() or give_up():  # executor shut down, or the turn was abandoned
                return None, None, True
            if not interrupted:
                interrupted = True
                on_cancel()
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            if future.done():
                break
        except Exception as exc:
            return None, exc, interrupted
    try:
        return future.result(), None, interrupted
    except Exception as exc:
        return None, exc, interrupted
