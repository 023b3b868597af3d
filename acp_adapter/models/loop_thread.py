"""A private asyncio event loop on a daemon thread, and a bridge from its async iterators to the
synchronous agent loop.

Why this exists: ``AIAgent`` runs on a worker thread and consumes a blocking iterator (the
:class:`~.base.ChatModel` protocol), while a network back-end is best written on asyncio
(``openai.AsyncOpenAI``): the request is then cancelled by cancelling its task, which aborts the
HTTP exchange at once, instead of by reaching into the HTTP client's sockets from another thread.
One :class:`LoopThread` per back-end runs every session's requests as tasks on one loop (the HTTP
connection pool belongs to that loop), so the agent's own ACP event loop never waits on a model.

:meth:`LoopThread.iterate` is the bridge: it runs an async iterator as a task, hands its items to
the calling thread in order through a queue, re-raises its exception there, and turns the
turn's :class:`~acp_adapter.cancel.CancelToken` into ``task.cancel()``; the calling thread is
released by the cancel itself (it does not wait for the task to unwind).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.models.base import ModelError

log = logging.getLogger("acp_progress.models.loop")

T = TypeVar("T")

_ITEM, _END, _ERROR, _CANCELLED = range(4)


class LoopThread:
    """An event loop running forever on a daemon thread until :meth:`close`."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(self._on_loop_error)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @staticmethod
    def _on_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        log.error("unhandled error in the model event loop: %s", context.get("message"), exc_info=exc)

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; the future can be waited on (or cancelled) from any thread."""
        if self._closed:
            coro.close()
            raise ModelError("The model back-end is shut down")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def iterate(self, make: Callable[[], AsyncIterator[T]], cancel: CancelToken) -> Iterator[T]:
        """Run ``make()`` on the loop and yield its items here, in order.

        Cancelling ``cancel`` cancels the task (its ``finally`` blocks run on the loop) and makes
        this iterator raise :class:`TurnCancelled` immediately. Closing this iterator early (the
        consumer stopped) cancels the task too.
        """
        items: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()

        async def pump() -> None:
            try:
                async for item in make():
                    items.put((_ITEM, item))
                    # hand the GIL to the agent thread now: parsing the rest of a burst would
                    # otherwise keep it here for a whole switch interval (5 ms) before the first
                    # delta closes the think card
                    time.sleep(0)  # noqa: ASYNC251 (a GIL hand-off, not a wait)
            except asyncio.CancelledError:
                items.put((_CANCELLED, None))
                raise
            except BaseException as exc:
                items.put((_ERROR, exc))
            else:
                items.put((_END, None))

        future = self.submit(pump())

        def abort() -> None:
            future.cancel()  # cancels the task on its loop (thread-safe)
            items.put((_CANCELLED, None))

        remove = cancel.on_cancel(abort)
        try:
            while True:
                kind, value = items.get()
                if kind == _ITEM:
                    yield value
                elif kind == _END:
                    return
                elif kind == _ERROR:
                    raise value
                elif cancel.cancelled:
                    raise TurnCancelled(cancel.reason)
                else:
                    raise ModelError("The model back-end shut down during the request")
        finally:
            remove()
            future.cancel()

    def close(self, timeout: float = 2.0) -> None:
        """Cancel what still runs, close the async generators still open, stop the loop and join
        its thread (idempotent).

        The same shutdown as :func:`asyncio.run`: a stream a request abandoned mid-way (an
        exception in its consumer, kept alive by the traceback) is an async generator suspended on
        this loop. Closed here, its ``finally`` blocks run while the loop still runs; left to the
        garbage collector, they would run after the loop closed, or not at all, and report
        "async generator already executing" from the HTTP client's stream at some later moment.
        """
        if self._closed:
            return
        self._closed = True

        async def cancel_all() -> None:
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.get_running_loop().shutdown_asyncgens()

        try:
            asyncio.run_coroutine_threadsafe(cancel_all(), self.loop).result(timeout)
        except (concurrent.futures.TimeoutError, RuntimeError):
            log.warning("model tasks did not finish within %.1fs of shutdown", timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()
