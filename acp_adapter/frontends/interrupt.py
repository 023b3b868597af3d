"""Ctrl-C for the terminal front-ends (``watch``, ``chat``, ``sessions``), from the first instant.

Why not ``loop.add_signal_handler``: it can only be installed once an event loop runs, after the
imports, the settings and the agent's spawn have begun, and a Ctrl-C before that was lost or died
as a traceback (``-2``). :func:`install` is the first thing the command line does for these
commands: a press is only counted (never a ``KeyboardInterrupt`` in the middle of some import or
``finally``), and the front-end's event loop, once it runs, :meth:`Interrupts.attach` es and sees
presses that came before it at once.
"""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # asyncio is imported on first use: install() runs before the heavy imports
    import asyncio
    from types import FrameType


class Interrupts:
    """Counts SIGINT presses; an attached event loop is woken on each one."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()
        self._changed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _press(self, signum: int, frame: FrameType | None) -> None:
        with self._lock:
            self.count += 1
            loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._notify)

    def press(self) -> None:
        """A press that did not come from the keyboard (stdout's reader went away): the front-end
        stops as for Ctrl-C. Safe from any thread."""
        self._press(signal.SIGINT, None)

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()

    def attach(self) -> None:
        """Wake the running event loop on every press (presses before this one count too)."""
        import asyncio

        loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        with self._lock:
            self._loop = loop
            if self.count:
                self._changed.set()

    def detach(self) -> None:
        with self._lock:
            self._loop = None
        self._changed = None

    async def wait_beyond(self, seen: int) -> int:
        """Wait until more than ``seen`` presses were counted; return the count."""
        assert self._changed is not None, "attach() first"
        while self.count <= seen:
            self._changed.clear()
            if self.count > seen:
                break
            await self._changed.wait()
        return self.count


#: The process's one counter (signals are per process).
interrupts = Interrupts()


def install() -> None:
    """Count Ctrl-C presses from now on instead of raising ``KeyboardInterrupt``."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, interrupts._press)
