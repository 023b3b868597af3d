"""Chat platforms: each provides a :class:`~acp_adapter.frontends.bridges.delivery.ChatSink` and an
input loop."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event, runner: Any = None) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` while a bridge runs (every platform stops the same way);
    outside the main thread, or where the loop cannot take signal handlers, nothing is installed.
    The first signal is kept as ``runner.stop_signal``: ``bridge run`` exits 128 + it (130, 143),
    as the other front-ends do."""
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []

    def handler(sig: signal.Signals) -> Callable[[], None]:
        def stop_now() -> None:
            if runner is not None and getattr(runner, "stop_signal", None) is None:
                runner.stop_signal = int(sig)
            stop.set()

        return stop_now

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, handler(sig))
            handled.append(sig)
    try:
        yield
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
