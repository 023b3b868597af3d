"""The SQLite session store: one database file in the state directory, shared safely by every
acp-progress process of the user (two editor windows, a bridge, the AG-UI server).

Why a store made of parts: the file (opening, locking, migrating, its transactions), the
conversations, the permission audit and the front-end state are four jobs with rules of their own.
:class:`SqliteStore` holds one of each and answers the
:class:`~acp_adapter.store.base.SessionStore` interface with them, so every caller sees one store:

* :class:`~acp_adapter.store.sqlite_database.SqliteDatabase` — the file, its WAL, busy timeout,
  privacy and corruption rules, its writing and reading connections and transactions;
* :class:`~acp_adapter.store.sqlite_tables.SqliteSessions` — sessions, events, model history;
* :class:`~acp_adapter.store.sqlite_tables.SqliteAudit` — the permission audit, which fails closed;
* :class:`~acp_adapter.store.kv_table.KeyValueTable` — front-end state, the same for PostgreSQL.

Pruning spans two of them (old sessions and audit entries as old go together), so it is the
store's own: one transaction that waits at most :data:`PRUNE_WAIT_S` for another process's lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp_adapter.store.base import (
    JsonObject,
    PermissionDecision,
    SessionPage,
    SessionRecord,
    StoredSession,
)
from acp_adapter.store.kv_table import KeyValueTable
from acp_adapter.store.sqlite_database import BUSY_TIMEOUT_S, DATABASE_NAME, SqliteDatabase
from acp_adapter.store.sqlite_file import is_busy, is_corrupt
from acp_adapter.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, StoreSchemaError
from acp_adapter.store.sqlite_tables import SqliteAudit, SqliteSessions

#: the names other modules import from here (the file's, the schema's and the database's included)
__all__ = [
    "BUSY_TIMEOUT_S",
    "DATABASE_NAME",
    "MIGRATIONS",
    "PRUNE_WAIT_S",
    "SCHEMA_VERSION",
    "SqliteStore",
    "StoreSchemaError",
    "is_busy",
    "is_corrupt",
]

#: the longest the start-up pruning waits for another process's lock (it is only housekeeping)
PRUNE_WAIT_S = 0.2


class SqliteStore:
    """Sessions, permission audit and front-end state in one SQLite file."""

    def __init__(self, directory: Path, *, busy_timeout: float | None = None) -> None:
        self.database = SqliteDatabase(directory, busy_timeout=busy_timeout)
        self.sessions = SqliteSessions(self.database)
        self.audit = SqliteAudit(self.database)
        self.state = KeyValueTable(self.database)

    def batch(self) -> contextlib.AbstractContextManager[None]:
        """Run several writes as one transaction (the background writer batches this way)."""
        return self.database.batch()

    # ------------------------------------------------------------------ sessions

    def upsert_session(self, record: SessionRecord) -> None:
        self.sessions.upsert(record)

    def append_events(self, session_id: str, events: Sequence[JsonObject], updated_at: float) -> None:
        self.sessions.append_events(session_id, events, updated_at)

    def trim_events(self, session_id: str, max_bytes: int, note: JsonObject) -> tuple[int, int]:
        return self.sessions.trim_events(session_id, max_bytes, note)

    def replace_history(self, session_id: str, history: Sequence[JsonObject]) -> None:
        self.sessions.replace_history(session_id, history)

    def load(self, session_id: str) -> StoredSession | None:
        return self.sessions.load(session_id)

    def fork(self, source_id: str, new_id: str, cwd: str, now: float) -> StoredSession | None:
        return self.sessions.fork(source_id, new_id, cwd, now)

    def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> SessionPage:
        return self.sessions.page(cwd, cursor, limit)

    def delete(self, session_id: str) -> bool:
        return self.sessions.delete(session_id)

    def prune(self, older_than: float) -> int:
        """Remove sessions last used before ``older_than`` (and audit entries as old); returns
        how many sessions went.

        Housekeeping, done as an agent starts: it waits at most :data:`PRUNE_WAIT_S` for a lock
        another process holds (then raises; the next start prunes), so a held database does not
        delay every start by the full busy timeout."""
        with self.database.batch(busy_wait=PRUNE_WAIT_S):
            self.audit.prune(older_than)
            return self.sessions.prune(older_than)

    # ------------------------------------------------------------------ permission audit

    def record_permission(self, decision: PermissionDecision) -> None:
        """Write one audit row durably, or raise :class:`~acp_adapter.store.base.AuditError`
        (:meth:`SqliteAudit.record <acp_adapter.store.sqlite_tables.SqliteAudit.record>`)."""
        self.audit.record(decision)

    def permission_audit(self, limit: int = 100) -> list[PermissionDecision]:
        return self.audit.recent(limit)

    # ------------------------------------------------------------------ front-end state

    def put(self, namespace: str, key: str, value: Any) -> None:
        self.state.put(namespace, key, value)

    def get(self, namespace: str, key: str) -> Any | None:
        return self.state.get(namespace, key)

    def items(self, namespace: str) -> list[tuple[str, Any]]:
        return self.state.items(namespace)

    def remove(self, namespace: str, key: str) -> None:
        self.state.remove(namespace, key)

    def close(self) -> None:
        self.database.close()
