"""Which process holds each open session, so that no other process deletes it from under it.

A session open in one process must not be deleted by another, whose turns would then have nowhere
to go: each process marks the sessions it holds in the front-end state namespace
:data:`SESSION_HOLDERS` and removes its own marks when it lets go. A pid means something only on
its own machine; on another (a shared PostgreSQL store), a marker counts while it is fresh.

Why a module of its own: holding is about processes and machines, apart from what a session's
conversation keeps (:mod:`acp_adapter.store.recorder`).
"""

from __future__ import annotations

import os
import socket
from typing import Any

#: Which process holds each open session (``{"pid", "host", "at"}``): a session open in one
#: process must not be deleted by another, whose turns would then have nowhere to go.
SESSION_HOLDERS = "agent.session-holders"


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine still runs (this process always does)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    try:  # a killed process whose parent died too may linger as a zombie nobody reaps
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def this_host() -> str:
    """The machine a turn's marker names: a pid means something only on its own machine (a
    shared PostgreSQL store is written from several)."""
    return socket.gethostname()


def holder_marker(at: float) -> dict[str, Any]:
    """What says "this process holds the session" (see :data:`SESSION_HOLDERS`)."""
    return {"pid": os.getpid(), "host": this_host(), "at": at}


def held_elsewhere(marker: object, *, now: float, fresh_within: float) -> dict[str, Any] | None:
    """The marker, when it names another process that may still hold the session: on this machine
    one that still runs; on another (a shared PostgreSQL store), one that used the session within
    ``fresh_within`` seconds (the idle time after which its holder frees it)."""
    if not isinstance(marker, dict):
        return None
    pid, host, at = marker.get("pid"), marker.get("host"), marker.get("at")
    if host == this_host() or not isinstance(host, str):
        alive = isinstance(pid, int) and pid != os.getpid() and process_alive(pid)
        return marker if alive else None
    return marker if isinstance(at, int | float) and now - at < fresh_within else None


class SessionHolds:
    """The sessions this process holds, with their workspace (to store one again if it went), and
    the removal of this process's marks. ``store`` is a
    :class:`~acp_adapter.store.base.SessionStore`; :meth:`let_go` reads and writes it, so it runs on
    the store's writer thread."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._held: dict[str, str] = {}

    def hold(self, session_id: str, cwd: str) -> None:
        self._held[session_id] = cwd

    def cwd_of(self, session_id: str) -> str:
        """The workspace a held session was opened in ("" when it is not held)."""
        return self._held.get(session_id, "")

    def release(self, session_id: str) -> bool:
        """Stop counting ``session_id`` as held; True when it was (its mark is then for :meth:`let_go`)."""
        return self._held.pop(session_id, None) is not None

    def release_all(self) -> list[str]:
        """Stop counting every session as held; returns them (their marks are for :meth:`let_go`)."""
        held, self._held = list(self._held), {}
        return held

    def let_go(self, session_id: str) -> None:
        """Remove this process's holder marker (never another process's, which loaded the session
        after us)."""
        marker = self._store.get(SESSION_HOLDERS, session_id)
        if (
            isinstance(marker, dict)
            and marker.get("pid") == os.getpid()
            and marker.get("host") == this_host()
        ):
            self._store.remove(SESSION_HOLDERS, session_id)
