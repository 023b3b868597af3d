"""Chat platforms: each provides a :class:`~acp_adapter.frontends.bridges.delivery.ChatSink` and an
input loop."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` while a bridge runs (every platform stops the same way);
    outside the main thread, or where the loop cannot take signal handlers, nothing is installed."""
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            handled.append(sig)
    try:
        yield
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
