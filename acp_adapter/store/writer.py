"""Writes off the hot path: a thread of the store's own that batches them.

The agent's event loop must never wait for the disk (time to the first think card and tool-progress
throughput are the product). Callers hand the writer small closures; its thread runs everything
queued since its last wake-up in one transaction (one fsync for many events). :meth:`flush` is the
barrier for the rare caller that must see its writes (a ``session/load`` of a session this process
is still writing, a test, shutdown).

A write that fails is logged (redacted, one line) and the writer goes on: the conversation the
user is having matters more than its copy on disk. A batch refused because another process holds
the database past the busy timeout is dropped whole (one error line), not retried write by write:
each retry would wait as long again, and a stalled writer delays every flush behind it.

A batch refused because the database went away (a PostgreSQL server restarting, a failover: the
store raises :class:`~acp_adapter.store.base.StoreUnavailable`) is different: nothing is wrong
with the writes, so the batch is kept and retried whole — its transaction was rolled back, so
replaying it writes each change once — with a growing pause, until the database is back. The log
says so when it starts and when the changes went through.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp_adapter.safety.redact import redact_text
from acp_adapter.store.base import StoreUnavailable
from acp_adapter.store.sqlite_file import is_busy

log = logging.getLogger("acp_progress.store")

Write = Callable[[], object]

#: after :meth:`BackgroundWriter.close`, how long a batch waiting for the database is still retried
RETRY_AFTER_CLOSE_S = 10.0
#: longest pause between two tries of a batch while the database is away
MAX_RETRY_PAUSE_S = 2.0


@dataclass(frozen=True, slots=True)
class _LoopBarrier:
    """A flush barrier whose waiter is on an event loop: ``set`` schedules its wake-up there."""

    set: Callable[[], object]


class BackgroundWriter:
    """Run store writes on one daemon thread, batched into transactions, in submission order."""

    def __init__(self, store: Any, *, name: str = "acp-progress-store") -> None:
        self._store = store
        self._queue: queue.SimpleQueue[Write | threading.Event | _LoopBarrier | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, write: Write) -> None:
        """Queue ``write`` (a closure calling the store); never blocks."""
        if not self._closed:
            self._queue.put(write)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything submitted so far is written; False on time-out."""
        if self._closed or not self._thread.is_alive():
            return True
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    async def flush_async(self, within: float = 10.0) -> bool:
        """:meth:`flush` for a caller on an event loop, with no thread of its own: the writer's
        thread wakes the awaiting task when it passes the barrier."""
        if self._closed or not self._thread.is_alive():
            return True
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not done.done():
                done.set_result(None)

        self._queue.put(_LoopBarrier(lambda: loop.call_soon_threadsafe(wake)))
        try:
            await asyncio.wait_for(asyncio.shield(done), within)
        except TimeoutError:
            return False
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop the thread."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            batch: list[Write] = []
            barriers: list[threading.Event | _LoopBarrier] = []
            stop = False
            while True:
                if item is None:
                    stop = True
                elif isinstance(item, threading.Event | _LoopBarrier):
                    barriers.append(item)
                else:
                    batch.append(item)
                if len(batch) >= 500:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            self._write(batch)
            for barrier in barriers:
                with contextlib.suppress(RuntimeError):  # the awaiting loop closed meanwhile
                    barrier.set()
            if stop:
                return

    def _write(self, batch: list[Write]) -> None:
        if not batch:
            return
        try:
            self._write_batch(batch)
            return
        except StoreUnavailable as exc:
            self._write_when_back(batch, exc)
            return
        except Exception as exc:  # one bad write must not take its neighbours with it: go one by one
            if is_busy(exc):  # another process holds the database: each retry would wait as long
                log.error(
                    "%d session changes were not saved: %s (another process holds the database)",
                    len(batch),
                    _why(exc),
                )
                return
            log.warning(
                "a batch of %d session changes failed (%s); retrying one by one", len(batch), _why(exc)
            )
        for write in batch:
            try:
                write()
            except Exception as exc:
                log.error("could not save a session change: %s", _why(exc))

    def _write_batch(self, batch: list[Write]) -> None:
        with self._store.batch():
            for write in batch:
                write()

    def _write_when_back(self, batch: list[Write], first: StoreUnavailable) -> bool:
        """Retry ``batch`` whole until the database is back (True) or, once the writer is closed,
        :data:`RETRY_AFTER_CLOSE_S` have passed (False: the changes are lost, said so)."""
        log.warning("%s: %d session changes are kept and retried until it is back", _why(first), len(batch))
        started = time.monotonic()
        closed_at: float | None = None
        pause = 0.1
        tries = 1
        while True:
            time.sleep(pause)
            pause = min(pause * 2, MAX_RETRY_PAUSE_S)
            tries += 1
            try:
                self._write_batch(batch)
            except StoreUnavailable as exc:
                if self._closed:
                    closed_at = time.monotonic() if closed_at is None else closed_at
                    if time.monotonic() - closed_at > RETRY_AFTER_CLOSE_S:
                        log.error("%d session changes were not saved: %s", len(batch), _why(exc))
                        return False
                continue
            except Exception as exc:
                log.error("could not save %d session changes: %s", len(batch), _why(exc))
                return False
            log.warning(
                "the session database is back: %d session changes written after %.1f s (%d tries)",
                len(batch),
                time.monotonic() - started,
                tries,
            )
            return True


def _why(exc: BaseException) -> str:
    return redact_text(str(exc)) or type(exc).__name__
