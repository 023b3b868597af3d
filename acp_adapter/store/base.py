"""What a session store keeps, and the small interface every back-end implements.

A stored session is the *canonical* conversation (history is canonical): the user's
messages, the agent's message and thought text, each tool call in its final state, plans and
usage — as ACP update JSON, so replaying it is sending those updates again — plus the model
history the agent needs to go on. Never heartbeats, progress snapshots, spinner cards or anything
a front-end only displayed: the recorder that feeds the store decides that, the store only keeps
what it is given.

The store is also the last gate for secrets: every string of every record passes the canonical
redactor on its way in (:func:`scrub`), so a secret a tool read never lands on disk, whoever
called the store.

The interface is deliberately small and synchronous: SQLite (one machine) and PostgreSQL
(:mod:`acp_adapter.store.postgres`, shared by every machine) implement it, and memory stands in.
Callers on an event loop go through :class:`~acp_adapter.store.writer.BackgroundWriter`, which
batches writes on a thread of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from acp_adapter.errors import AcpProgressError
from acp_adapter.safety.redact import redact_value

JsonObject = dict[str, Any]


class StoreError(AcpProgressError):
    """The session store cannot do what was asked (the message says what and where)."""


class AuditError(StoreError):
    """A permission decision could not be written to the audit durably (disk full, a lock held
    past the busy timeout, a trigger that raised or removed the row). The call it was for must
    not run: the audit fails closed."""


class SessionGone(StoreError):
    """Events were written for a session the store no longer has: another process deleted it
    while it was open here. The writer says so and stores the session again rather than let the
    turn vanish."""


class StoreUnavailable(StoreError):
    """The database could not be reached, or the connection broke mid-statement (a server
    restarting, a failover): nothing is wrong with the request, so it is worth retrying."""


class StoreVersionError(StoreError):
    """The database was written by a newer acp-progress, whose schema this one cannot read."""


@dataclass(frozen=True)
class SessionRecord:
    """What ``session/list`` shows of a session."""

    session_id: str
    cwd: str
    title: str | None
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class StoredSession:
    """A whole stored session: its record, its canonical events in order, its model history."""

    record: SessionRecord
    events: list[JsonObject]
    history: list[JsonObject] = field(default_factory=list)


@dataclass(frozen=True)
class SessionPage:
    sessions: list[SessionRecord]
    next_cursor: str | None


#: ``decided_by`` of a question withdrawn by the turn's cancel (recorded, never read as a denial)
CANCELLED_DECISION = "cancelled"


@dataclass(frozen=True)
class PermissionDecision:
    """One audited permission answer: written before the agent is told "allow"."""

    at: float
    session_id: str
    tool_call_id: str
    title: str
    allowed: bool
    #: who decided: a person ("telegram:12345", "terminal"), or "auto" (``--yes``, a policy), or
    #: :data:`CANCELLED_DECISION` (nobody: the question was withdrawn as its turn was cancelled)
    decided_by: str
    #: where: "acp", "watch", "telegram", "agui", "plain" …
    surface: str
    #: the session rule that answered without asking (``mode auto``, ``mode read-only``,
    #: ``always allow execute:ls``), or the rule the person's "always" answer made; empty for a
    #: one-time answer
    rule: str = ""


def dumps(value: Any) -> str:
    """Strict JSON (no NaN/Infinity) for the database."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def drop_count(sizes: Sequence[int], max_bytes: int, note_bytes: int) -> int:
    """How many of the oldest events (``sizes``, oldest first) to drop so that the rest and a note of
    ``note_bytes`` fit ``max_bytes``; 0 while everything fits. The newest event is never kept at the
    note's expense only: when even it does not fit, everything goes and the note stays alone."""
    if sum(sizes) <= max_bytes:
        return 0
    budget = max_bytes - note_bytes
    kept = 0
    keep = 0
    for size in reversed(sizes):
        if kept + size > budget:
            break
        kept += size
        keep += 1
    return len(sizes) - keep


def scrub(value: Any) -> Any:
    """``value`` with every string passed through the canonical redactor."""
    return redact_value(value)


class KeyValueStore(Protocol):
    """Small durable state of the front-ends: a chat's session id, an update offset, a thread's
    session. Namespaced so front-ends never collide."""

    def put(self, namespace: str, key: str, value: Any) -> None: ...

    def get(self, namespace: str, key: str) -> Any | None: ...

    def items(self, namespace: str) -> list[tuple[str, Any]]: ...

    def remove(self, namespace: str, key: str) -> None: ...


class SessionStore(KeyValueStore, Protocol):
    """The session store's interface; :class:`~acp_adapter.store.sqlite.SqliteStore`,
    :class:`~acp_adapter.store.postgres.PostgresStore` and
    :class:`~acp_adapter.store.memory.MemoryStore` implement it. It includes the key-value state:
    the recorder keeps its open-turn markers there."""

    def upsert_session(self, record: SessionRecord) -> None: ...

    def append_events(self, session_id: str, events: Sequence[JsonObject], updated_at: float) -> None: ...

    def replace_history(self, session_id: str, history: Sequence[JsonObject]) -> None: ...

    def trim_events(self, session_id: str, max_bytes: int, note: JsonObject) -> tuple[int, int]:
        """Keep the session's newest events within ``max_bytes`` (of their stored JSON): when over,
        drop the oldest and put ``note`` first in their place. Returns (events dropped, bytes kept)."""
        ...

    def load(self, session_id: str) -> StoredSession | None: ...

    def fork(self, source_id: str, new_id: str, cwd: str, now: float) -> StoredSession | None:
        """Store a copy of session ``source_id`` as ``new_id`` (in ``cwd``, created ``now``): the
        same title, events and model history, independent from then on. Returns the new session
        as stored but without its events (copied, never read), or None when ``source_id`` is not
        stored (nothing is written then)."""
        ...

    def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> SessionPage: ...

    def delete(self, session_id: str) -> bool: ...

    def prune(self, older_than: float) -> int: ...

    def record_permission(self, decision: PermissionDecision) -> None: ...

    def permission_audit(self, limit: int = 100) -> list[PermissionDecision]: ...

    def batch(self) -> AbstractContextManager[None]:
        """Group the writes made inside it into one transaction."""
        ...

    def close(self) -> None: ...
