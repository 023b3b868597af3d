"""One warning per failure streak: a summary server that is down must not fill the terminal.

A generator that fails every tick (an unreachable server, a wrong key) would otherwise print a
WARNING per interval, between the cards of the very turn the summary was meant to describe. The
streak is shared by every turn a :class:`~.factory.SummaryFactory` creates (a conversation's turns,
a bridge's chats), so the warning is said once, with its reason class, until a generation succeeds;
the failures in between go to the debug log and to ``on_trace`` only.

The reason class never carries the error's message (it may quote a key, a URL or the prompt):
it is ``unreachable``, ``timeout``, ``HTTP 401`` …, or the exception's type name.
"""

from __future__ import annotations

import threading


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def failure_class(reason: str, exc: BaseException | None) -> str:
    """A short, message-free name for why a generation failed (``reason`` is the capability's:
    ``error``, ``timeout`` or ``template``)."""
    if reason != "error" or exc is None:
        return reason
    names = _class_names(exc)
    if names & {"APITimeoutError", "TimeoutException", "TimeoutError"}:
        return "timeout"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return f"HTTP {status}"
    if names & {"APIConnectionError", "ConnectError", "ConnectionError", "OSError"}:
        return "unreachable"
    if names & {"RemoteProtocolError", "ReadError", "IncompleteStream"}:
        return "broken stream"
    return type(exc).__name__


class FailureStreak:
    """Counts consecutive failed generations; says when a streak begins and when it ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one factory may serve turns on several loops
        self.failures = 0
        self.streaks = 0

    def failed(self) -> bool:
        """Record a failure; True when it is the first of a streak (the one to warn about)."""
        with self._lock:
            self.failures += 1
            if self.failures == 1:
                self.streaks += 1
                return True
            return False

    def succeeded(self) -> int:
        """Record a success; returns how many failures the streak it ended had (0: none)."""
        with self._lock:
            ended, self.failures = self.failures, 0
            return ended
