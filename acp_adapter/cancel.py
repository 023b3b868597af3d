"""A cancellation signal that a synchronous agent loop and its model back-end can both honour.

The agent loop runs in a worker thread, so ``anyio`` cancel scopes cannot reach it. This token is
the bridge: the event loop sets it on ``session/cancel`` and blocking code either waits on it
(``wait``) or registers a hook that aborts its I/O (for example closing an HTTP response).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from acp_adapter.errors import AcpProgressError

__all__ = ["CONNECTION_CLOSED", "SHUTTING_DOWN", "CancelToken", "TurnCancelled", "outlives_cancel"]

log = logging.getLogger("acp_progress.cancel")


#: Why a turn is cancelled when the editor hung up, and when the agent is shutting down.
CONNECTION_CLOSED = "the client connection closed"
SHUTTING_DOWN = "the agent is shutting down"


def outlives_cancel(reason: str) -> bool:
    """Whether work that lives elsewhere (an MCP task on its server) should go on after a turn was
    cancelled for ``reason``: yes when nobody asked to stop it (the editor hung up, the agent is
    shutting down) — the next load of the session picks it up again; no when a person cancelled."""
    return reason in (CONNECTION_CLOSED, SHUTTING_DOWN)


class TurnCancelled(AcpProgressError):
    """Raised inside the agent loop when the turn was cancelled; never escapes to the client."""


class CancelToken:
    """One-shot, thread-safe cancellation flag with abort hooks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        #: what a waiting thread sleeps on, made by the first :meth:`wait`: every prompt makes a
        #: token before its spinner goes out, and most turns never wait on theirs
        self._event: threading.Event | None = None
        self._hooks: list[Callable[[], None]] = []
        self.reason = ""

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self, reason: str = "cancelled") -> None:
        """Set the flag and run the abort hooks once; later calls do nothing."""
        with self._lock:
            if self._cancelled:
                return
            self.reason = reason
            self._cancelled = True
            if self._event is not None:
                self._event.set()
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            try:
                hook()
            except Exception:
                log.exception("cancel hook failed")

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds; return True as soon as the token is cancelled."""
        with self._lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def raise_if_cancelled(self) -> None:
        if self._cancelled:
            raise TurnCancelled(self.reason)

    def on_cancel(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Register ``hook`` to run on cancel (immediately if already cancelled).

        Returns a function that unregisters the hook, so a finished HTTP request does not keep a
        reference to its response alive for the rest of the turn.
        """
        with self._lock:
            if not self._cancelled:
                self._hooks.append(hook)

                def remove() -> None:
                    with self._lock:
                        if hook in self._hooks:
                            self._hooks.remove(hook)

                return remove
        hook()
        return lambda: None
