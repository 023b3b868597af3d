"""What the SQLite store writes and reads: the conversations (sessions, their events and model
history) and the permission audit, each a class over the open database
(:class:`~acp_adapter.store.sqlite_database.SqliteDatabase`).

Why apart from the database: opening, locking and migrating the file is one job, what the rows
mean is another; and the audit has rules of its own:

* **The audit fails closed** — :meth:`SqliteAudit.record` writes its row in its own transaction,
  synced (``synchronous = FULL``), then reads it back; any failure (disk full, a lock held past
  the busy timeout, a trigger raising or deleting the row) raises
  :class:`~acp_adapter.store.base.AuditError`, and the caller refuses the call.

Every string passes :func:`~acp_adapter.store.base.scrub` on its way in; the SQL shared with
PostgreSQL is in :mod:`~acp_adapter.store.queries`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from acp_adapter.store.base import (
    AuditError,
    JsonObject,
    PermissionDecision,
    SessionGone,
    SessionPage,
    SessionRecord,
    StoredSession,
    drop_count,
    dumps,
    scrub,
)
from acp_adapter.store.queries import (
    AUDIT_COLUMNS,
    audit_decisions,
    check_audit_kept,
    fork_args,
    fork_statements,
    session_list_query,
    session_page,
    stored_session,
)
from acp_adapter.store.sqlite_database import SqliteDatabase, immediate
from acp_adapter.store.sqlite_file import is_busy

_SESSION_ROW = "SELECT id, cwd, title, created_at, updated_at, history FROM sessions WHERE id = ?"


class SqliteSessions:
    """The canonical conversations: the ``sessions`` and ``events`` tables."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    def upsert(self, record: SessionRecord) -> None:
        title = scrub(record.title) if record.title is not None else None
        with self._db.transaction() as db:
            db.execute(
                "INSERT INTO sessions (id, cwd, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET cwd = excluded.cwd, "
                "title = COALESCE(excluded.title, sessions.title), updated_at = excluded.updated_at",
                (record.session_id, record.cwd, title, record.created_at, record.updated_at),
            )

    def append_events(self, session_id: str, events: Sequence[JsonObject], updated_at: float) -> None:
        bodies = [dumps(scrub(event)) for event in events]
        with self._db.transaction() as db:
            if db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
                raise SessionGone(f"session {session_id} is not in the store")
            if not bodies:
                return
            row = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,))
            start = row.fetchone()[0] + 1
            db.executemany(
                "INSERT INTO events (session_id, seq, body) VALUES (?, ?, ?)",
                [(session_id, start + i, body) for i, body in enumerate(bodies)],
            )
            db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (updated_at, session_id))

    def trim_events(self, session_id: str, max_bytes: int, note: JsonObject) -> tuple[int, int]:
        note_body = dumps(scrub(note))
        with self._db.transaction() as db:
            rows = db.execute(
                "SELECT seq, LENGTH(CAST(body AS BLOB)) FROM events WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
            sizes = [size for _seq, size in rows]
            cut = drop_count(sizes, max_bytes, len(note_body.encode()))
            if not cut:
                return 0, sum(sizes)
            last_dropped = rows[cut - 1][0]
            db.execute("DELETE FROM events WHERE session_id = ? AND seq <= ?", (session_id, last_dropped))
            insert = "INSERT INTO events (session_id, seq, body) VALUES (?, ?, ?)"
            db.execute(insert, (session_id, last_dropped, note_body))
            return cut, sum(sizes[cut:]) + len(note_body.encode())

    def replace_history(self, session_id: str, history: Sequence[JsonObject]) -> None:
        body = dumps(scrub(list(history)))
        with self._db.transaction() as db:
            db.execute("UPDATE sessions SET history = ? WHERE id = ?", (body, session_id))

    def load(self, session_id: str) -> StoredSession | None:
        rows = self._db.read(_SESSION_ROW, (session_id,))
        if not rows:
            return None
        events = self._db.read("SELECT body FROM events WHERE session_id = ? ORDER BY seq", (session_id,))
        return stored_session(session_id, rows[0], events)

    def fork(self, source_id: str, new_id: str, cwd: str, now: float) -> StoredSession | None:
        session_sql, events_sql = fork_statements("", "?")
        session_args, events_args = fork_args(source_id, new_id, cwd, now)
        with self._db.transaction() as db:
            if db.execute(session_sql, session_args).rowcount == 0:
                return None
            db.execute(events_sql, events_args)
            row = db.execute(_SESSION_ROW, (new_id,)).fetchone()
        return stored_session(new_id, row, [])

    def page(self, cwd: str | None = None, cursor: str | None = None, limit: int = 50) -> SessionPage:
        """A page of the sessions, newest first (``session/list``)."""
        sql, args = session_list_query("sessions", "?", cwd, cursor, limit)
        return session_page(self._db.read(sql, args), limit)

    def delete(self, session_id: str) -> bool:
        with self._db.transaction() as db:
            return db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    def prune(self, older_than: float) -> int:
        """Remove the sessions last used before ``older_than`` (their events go with them)."""
        with self._db.transaction() as db:
            rowcount: int = db.execute("DELETE FROM sessions WHERE updated_at < ?", (older_than,)).rowcount
            return rowcount


class SqliteAudit:
    """The permission audit: the ``permissions`` table, written durably or not at all."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    def record(self, decision: PermissionDecision) -> None:
        """Write one audit row durably, or raise :class:`AuditError` (the caller then refuses the
        call: an allowed command never runs unrecorded).

        Its own transaction (never a writer batch, which may fail later), synced to disk, then
        read back by its rowid: a trigger that deletes or changes the row, planted after this
        store was opened, is caught too. The whole wait — for the writer thread and for another
        process's lock — is bounded by the database's busy timeout.
        """
        d = decision
        row = (
            d.at,
            d.session_id,
            d.tool_call_id,
            scrub(d.title),
            int(d.allowed),
            scrub(d.decided_by),
            d.surface,
            scrub(d.rule),
        )
        if self._db.in_batch:  # the writer thread never audits; if it did, its batch is not durable yet
            raise AuditError("the permission audit cannot be written inside a batch of other writes")
        try:
            with self._db.synced() as db:
                with immediate(db):
                    rowid = db.execute(
                        f"INSERT INTO permissions ({AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        row,
                    ).lastrowid
                kept = db.execute(
                    f"SELECT {AUDIT_COLUMNS} FROM permissions WHERE id = ?", (rowid,)
                ).fetchone()
        except TimeoutError as exc:
            raise AuditError(str(exc)) from None
        except sqlite3.Error as exc:
            why = (
                f"is locked by another process (waited {self._db.busy_timeout:g} s)"
                if is_busy(exc)
                else f"failed: {exc}"
            )
            raise AuditError(f"the session database {why}: {self._db.path}") from exc
        check_audit_kept(kept, row, str(self._db.path))

    def recent(self, limit: int = 100) -> list[PermissionDecision]:
        """The newest ``limit`` decisions, newest first."""
        return audit_decisions(
            self._db.read(f"SELECT {AUDIT_COLUMNS} FROM permissions ORDER BY id DESC LIMIT ?", (limit,))
        )

    def prune(self, older_than: float) -> None:
        """Remove the decisions made before ``older_than``."""
        with self._db.transaction() as db:
            db.execute("DELETE FROM permissions WHERE at < ?", (older_than,))
