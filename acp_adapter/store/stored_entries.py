"""A session's stored entries, as the store's writer thread appends them: kept within the
session's byte cap, and never lost to a session deleted while it was open here.

Why a module of its own: these are the writes of a turn's entries and what guards them (every
input is bounded; a turn is kept), apart from what the entries are
(:mod:`acp_adapter.store.turn_entries`) and when they are written
(:mod:`acp_adapter.store.recorder`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from acp_adapter.store.base import JsonObject, SessionGone, SessionRecord, dumps
from acp_adapter.store.session_holds import SESSION_HOLDERS, holder_marker
from acp_adapter.store.turn_entries import agent_note

log = logging.getLogger("acp_progress.store")

#: The most bytes of stored entries one session keeps unless told otherwise (``max_session_bytes``).
DEFAULT_MAX_SESSION_BYTES = 20 * 1024 * 1024


def trimmed_note(max_bytes: int) -> str:
    """What takes the place of the entries a session over its storage cap no longer keeps."""
    return (
        f"(earlier parts of this conversation were not kept: a session keeps at most "
        f"{max_bytes / (1024 * 1024):g} MB; ACP_PROGRESS_MAX_SESSION_BYTES sets that)"
    )


class StoredEntries:
    """Appends sessions' entries to ``store`` (a :class:`~acp_adapter.store.base.SessionStore`),
    on the writer's thread only. ``cwd_of`` names the workspace of a session this process holds,
    to store it again should it have gone."""

    def __init__(self, store: Any, max_session_bytes: int, cwd_of: Callable[[str], str]) -> None:
        self._store = store
        self.max_session_bytes = max_session_bytes
        self._cwd_of = cwd_of
        #: bytes of stored entries per session, as far as this process knows (the writer's thread
        #: alone reads and writes it): the store is asked again only when a turn may pass the cap
        self._stored_bytes: dict[str, int] = {}

    def append(self, session_id: str, entries: Sequence[JsonObject], now: float) -> None:
        """Append a turn's entries; when the session has gone from the store meanwhile (another
        process deleted it while it was open here), say so loudly and store it again, so the turn
        is kept rather than dropped."""
        try:
            self._store.append_events(session_id, entries, now)
        except SessionGone:
            log.error(
                "session %s was deleted from the session store while it was open in this process; "
                "it is stored again so this turn is kept (close a session before deleting it)",
                session_id,
            )
            cwd = self._cwd_of(session_id)
            self._store.upsert_session(SessionRecord(session_id, cwd, None, now, now))
            self._store.put(SESSION_HOLDERS, session_id, holder_marker(now))
            self._stored_bytes.pop(session_id, None)
            self._store.append_events(session_id, entries, now)

    def count(self, session_id: str, entries: Sequence[JsonObject]) -> int | None:
        """Add ``entries`` (just written) to the session's known stored bytes; None when unknown."""
        known = self._stored_bytes.get(session_id)
        if known is not None:
            known = self._stored_bytes[session_id] = known + sum(len(dumps(e).encode()) for e in entries)
        return known

    def keep_under_cap(self, session_id: str, entries: Sequence[JsonObject]) -> None:
        """One session's stored entries stay within :attr:`max_session_bytes` (every input is bounded:
        one AG-UI thread fed 15 MB runs would otherwise grow without bound): the oldest go first,
        a note takes their place, the log says so. Runs after the turn's entries are written."""
        known = self.count(session_id, entries)
        if known is not None and known <= self.max_session_bytes:
            return
        note = agent_note(trimmed_note(self.max_session_bytes))
        dropped, kept = self._store.trim_events(session_id, self.max_session_bytes, note)
        self._stored_bytes[session_id] = kept
        if dropped:
            log.warning(
                "session %s: dropped its %d oldest stored entries (it keeps at most %d bytes)",
                session_id,
                dropped,
                self.max_session_bytes,
            )

    def forget(self, session_id: str) -> None:
        """The session closed here: what this process knew of its size may be stale next time."""
        self._stored_bytes.pop(session_id, None)
