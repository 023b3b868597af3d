"""What the PostgreSQL store writes and reads: the conversations (sessions, their events and model
history) and the permission audit, each a class over the connected database
(:class:`~acp_adapter.store.postgres_database.PostgresDatabase`).

Why apart from the database: reaching, pooling and retrying the server is one job, what the rows
mean is another. Where several processes (machines) write one session, row locks order them: a
turn appended while it is forked lands wholly before or after the copy. The audit has rules of
its own:

* **The audit fails closed, bounded** — :meth:`PostgresAudit.record` writes its row in its own
  transaction (committed synchronously), reads it back, and raises
  :class:`~acp_adapter.store.base.AuditError` on any failure or after :data:`AUDIT_WAIT_S`.

Every string passes :func:`~acp_adapter.store.base.scrub` on its way in, as with SQLite; the SQL
shared with SQLite is in :mod:`~acp_adapter.store.queries`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp_adapter.store.base import (
    AuditError,
    JsonObject,
    PermissionDecision,
    SessionGone,
    SessionPage,
    SessionRecord,
    StoredSession,
    StoreError,
    drop_count,
    dumps,
    scrub,
)
from acp_adapter.store.postgres_database import PostgresDatabase
from acp_adapter.store.postgres_schema import SCHEMA
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

S = SCHEMA

#: the longest a permission decision waits to be written before the call it is for is refused
AUDIT_WAIT_S = 2.0

_SESSION_ROW = f"SELECT id, cwd, title, created_at, updated_at, history FROM {S}.sessions WHERE id = %s"


class PostgresSessions:
    """The canonical conversations: the ``sessions`` and ``events`` tables."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    def upsert(self, record: SessionRecord) -> None:
        title = scrub(record.title) if record.title is not None else None
        self._db.run(
            lambda db: db.execute(
                f"INSERT INTO {S}.sessions (id, cwd, title, created_at, updated_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET cwd = excluded.cwd, "
                "title = COALESCE(excluded.title, sessions.title), updated_at = excluded.updated_at",
                (record.session_id, record.cwd, title, record.created_at, record.updated_at),
            ),
            what="saving a session",
        )

    def append_events(self, session_id: str, events: Sequence[JsonObject], updated_at: float) -> None:
        bodies = [dumps(scrub(event)) for event in events]

        def op(db: Any) -> None:
            with db.transaction():
                # the session row's lock orders two writers of one session (two replicas …)
                if (
                    db.execute(
                        f"SELECT 1 FROM {S}.sessions WHERE id = %s FOR UPDATE", (session_id,)
                    ).fetchone()
                    is None
                ):
                    raise SessionGone(f"session {session_id} is not in the store")
                if not bodies:
                    return
                row = db.execute(
                    f"SELECT COALESCE(MAX(seq), 0) FROM {S}.events WHERE session_id = %s", (session_id,)
                ).fetchone()
                start = int(row[0]) + 1
                with db.cursor() as cur:
                    cur.executemany(
                        f"INSERT INTO {S}.events (session_id, seq, body) VALUES (%s, %s, %s)",
                        [(session_id, start + i, body) for i, body in enumerate(bodies)],
                    )
                db.execute(f"UPDATE {S}.sessions SET updated_at = %s WHERE id = %s", (updated_at, session_id))

        self._db.run(op, what="saving a conversation")

    def trim_events(self, session_id: str, max_bytes: int, note: JsonObject) -> tuple[int, int]:
        """Keep the session's newest events within ``max_bytes`` (the oldest dropped, ``note``
        first in their place); returns (events dropped, bytes kept)."""
        note_body = dumps(scrub(note))
        note_size = len(note_body.encode())

        def op(db: Any) -> tuple[int, int]:
            with db.transaction():
                rows = db.execute(
                    f"SELECT seq, octet_length(body) FROM {S}.events WHERE session_id = %s ORDER BY seq",
                    (session_id,),
                ).fetchall()
                sizes = [int(size) for _seq, size in rows]
                cut = drop_count(sizes, max_bytes, note_size)
                if not cut:
                    return 0, sum(sizes)
                last_dropped = rows[cut - 1][0]
                db.execute(
                    f"DELETE FROM {S}.events WHERE session_id = %s AND seq <= %s", (session_id, last_dropped)
                )
                db.execute(
                    f"INSERT INTO {S}.events (session_id, seq, body) VALUES (%s, %s, %s)",
                    (session_id, last_dropped, note_body),
                )
                return cut, sum(sizes[cut:]) + note_size

        return self._db.run(op, what="trimming a conversation")

    def replace_history(self, session_id: str, history: Sequence[JsonObject]) -> None:
        body = dumps(scrub(list(history)))
        self._db.run(
            lambda db: db.execute(f"UPDATE {S}.sessions SET history = %s WHERE id = %s", (body, session_id)),
            what="saving a model history",
        )

    def load(self, session_id: str) -> StoredSession | None:
        def op(db: Any) -> tuple[Any, list[Any]] | None:
            with db.transaction():
                row = db.execute(_SESSION_ROW, (session_id,)).fetchone()
                if row is None:
                    return None
                events = db.execute(
                    f"SELECT body FROM {S}.events WHERE session_id = %s ORDER BY seq", (session_id,)
                ).fetchall()
                return row, events

        found = self._db.run(op, what="loading a session")
        if found is None:
            return None
        row, events = found
        return stored_session(session_id, row, events)

    def fork(self, source_id: str, new_id: str, cwd: str, now: float) -> StoredSession | None:
        session_sql, events_sql = fork_statements(f"{S}.", "%s")
        session_args, events_args = fork_args(source_id, new_id, cwd, now)

        def op(db: Any) -> Any:
            with db.transaction():
                # the source row's lock: a turn being appended to it lands wholly before or after
                if (
                    db.execute(f"SELECT 1 FROM {S}.sessions WHERE id = %s FOR SHARE", (source_id,)).fetchone()
                    is None
                ):
                    return None
                db.execute(session_sql, session_args)
                db.execute(events_sql, events_args)
                return db.execute(_SESSION_ROW, (new_id,)).fetchone()

        row = self._db.run(op, what="forking a session")
        return None if row is None else stored_session(new_id, row, [])

    def page(self, cwd: str | None = None, cursor: str | None = None, limit: int = 50) -> SessionPage:
        """A page of the sessions, newest first (``session/list``)."""
        sql, args = session_list_query(f"{S}.sessions", "%s", cwd, cursor, limit)
        return session_page(self._db.read(sql, args, what="listing sessions"), limit)

    def delete(self, session_id: str) -> bool:
        return bool(
            self._db.run(
                lambda db: db.execute(f"DELETE FROM {S}.sessions WHERE id = %s", (session_id,)).rowcount > 0,
                what="deleting a session",
            )
        )

    def prune(self, older_than: float) -> int:
        """Remove the sessions last used before ``older_than`` (their events go with them)."""
        return int(
            self._db.run(
                lambda db: (
                    db.execute(f"DELETE FROM {S}.sessions WHERE updated_at < %s", (older_than,)).rowcount
                ),
                what="pruning old sessions",
            )
        )


class PostgresAudit:
    """The permission audit: the ``permissions`` table, written durably or not at all."""

    def __init__(self, db: PostgresDatabase, wait: float = AUDIT_WAIT_S) -> None:
        self._db = db
        #: the longest one decision waits to be written before the call it is for is refused
        self.wait = wait

    def record(self, decision: PermissionDecision) -> None:
        """Write one audit row durably and read it back, or raise :class:`AuditError` (the caller
        then refuses the call). Never inside a writer batch; bounded by :attr:`wait`."""
        d = decision
        row = (
            d.at,
            d.session_id,
            d.tool_call_id,
            scrub(d.title),
            bool(d.allowed),
            scrub(d.decided_by),
            d.surface,
            scrub(d.rule),
        )
        if self._db.in_batch:
            raise AuditError("the permission audit cannot be written inside a batch of other writes")

        def op(db: Any) -> Any:
            with db.transaction():
                db.execute(f"SET LOCAL statement_timeout = '{int(self.wait * 1000)}ms'")
                db.execute("SET LOCAL synchronous_commit = on")
                (rowid,) = db.execute(
                    f"INSERT INTO {S}.permissions ({AUDIT_COLUMNS}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                    row,
                ).fetchone()
            return db.execute(
                f"SELECT {AUDIT_COLUMNS} FROM {S}.permissions WHERE id = %s",
                (rowid,),
            ).fetchone()

        try:
            kept = self._db.run(op, retry_for=self.wait, what="writing a permission decision")
        except StoreError as exc:
            raise AuditError(str(exc)) from None
        check_audit_kept(kept, row, f"the session database at {self._db.url.where()}")

    def recent(self, limit: int = 100) -> list[PermissionDecision]:
        """The newest ``limit`` decisions, newest first."""
        return audit_decisions(
            self._db.read(
                f"SELECT {AUDIT_COLUMNS} FROM {S}.permissions ORDER BY id DESC LIMIT %s",
                (limit,),
                what="reading the audit",
            )
        )

    def prune(self, older_than: float) -> None:
        """Remove the decisions made before ``older_than``."""
        self._db.run(
            lambda db: db.execute(f"DELETE FROM {S}.permissions WHERE at < %s", (older_than,)),
            what="pruning the audit",
        )
