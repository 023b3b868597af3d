"""The one observer interface for a stream of ACP session updates.

Several things watch the same stream beside the client that reads it: the progress summary, the
session recorder, an AG-UI run's projections, a front-end's own summary. Each implements
:class:`UpdateObserver` — ``observe(update)``, called once per update, in the order the client gets
them — and registers with whatever owns the stream (the agent's outbox per session, an AG-UI run,
a front-end's turn). :class:`Observers` is the fan-out they all use, so "an observer that fails
never breaks the stream" (a failing hook never breaks the turn) is written once: the failure
is logged, redacted, and the update still reaches the other observers and the client.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from typing import Any, Protocol

from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.observers")


class UpdateObserver(Protocol):
    """Watches one session's ACP updates, in order. ``observe`` must be quick and never block:
    it runs on the path that delivers the update (hand slow work to a task or a thread)."""

    def observe(self, update: Any) -> None: ...


class Observers:
    """The observers of one stream, called in the order they were added, each call contained.

    It is an :class:`UpdateObserver` itself, so a stream's fan-out can be registered where one
    observer goes. Adding or removing while an update is being delivered is safe: the delivery
    walks a snapshot.
    """

    def __init__(self, observers: Iterable[UpdateObserver] = (), *, name: str = "update observer") -> None:
        self._observers: list[UpdateObserver] = list(observers)
        self.name = name

    def add(self, observer: UpdateObserver) -> None:
        self._observers.append(observer)

    def discard(self, observer: UpdateObserver) -> None:
        """Remove ``observer`` if it is here (a second discard is not an error)."""
        with contextlib.suppress(ValueError):
            self._observers.remove(observer)

    def __len__(self) -> int:
        return len(self._observers)

    def observe(self, update: Any) -> None:
        for observer in tuple(self._observers):
            try:
                observer.observe(update)
            except Exception as exc:
                log.warning(
                    "%s %s failed on an update; ignored: %s",
                    self.name,
                    type(observer).__name__,
                    redact_text(f"{type(exc).__name__}: {exc}")[:300],
                    exc_info=exc if log.isEnabledFor(logging.DEBUG) else None,
                )
