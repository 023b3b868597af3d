"""The PostgreSQL session store: one database that every acp-progress process on every machine
shares (several AG-UI replicas behind a load balancer, a bridge and its standby, editors' agents).

Why each choice:

* **The same interface and the same redaction as SQLite** — every caller (the recorder, the
  durable outbox, the bridge's update offset, the audit, the AG-UI thread map) works unchanged;
  every string passes :func:`~acp_adapter.store.base.scrub` on its way in.
* **A connection pool (psycopg_pool), each connection checked when it is handed out** — after
  the server restarts, a dead connection is replaced instead of failing the next write.
* **Writes stay off the hot path** — callers on an event loop still go through
  :class:`~acp_adapter.store.writer.BackgroundWriter`; :meth:`PostgresStore.batch` runs its
  closures in one transaction on one pooled connection (one round trip per statement, one commit
  per batch).
* **A database that goes away is waited for, not given up on** — a statement that fails because
  the connection broke (the server restarted, a failover) raises :class:`StoreUnavailable`; a
  single call retries for :attr:`PostgresStore.retry_for` seconds, saying so in the log, and the
  background writer keeps its batch and retries it whole until the database is back (a rolled
  back transaction is replayed exactly). Other errors are not retried.
* **The audit fails closed, bounded** — :meth:`PostgresStore.record_permission` writes its row in
  its own transaction (committed synchronously), reads it back, and raises
  :class:`~acp_adapter.store.base.AuditError` on any failure or after :data:`AUDIT_WAIT_S`.
* **The password is never shown** — every error message passes :meth:`DatabaseUrl.clean`; the
  URL is only ever printed as :meth:`DatabaseUrl.shown`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from acp_adapter.store.base import (
    AuditError,
    JsonObject,
    PermissionDecision,
    SessionGone,
    SessionPage,
    SessionRecord,
    StoredSession,
    StoreError,
    StoreUnavailable,
    drop_count,
    dumps,
    scrub,
)
from acp_adapter.store.postgres_schema import SCHEMA, check_schema, migrate
from acp_adapter.store.postgres_url import DatabaseUrl
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

log = logging.getLogger("acp_progress.store")

T = TypeVar("T")
S = SCHEMA

#: seconds a connection attempt may take (an unreachable host fails within it)
CONNECT_TIMEOUT_S = 5
#: seconds one call (a read, a write outside the writer) retries a database that went away
RETRY_FOR_S = 15.0
#: the longest a permission decision waits to be written before the call it is for is refused
AUDIT_WAIT_S = 2.0
#: the longest start-up pruning waits for a row lock (it is housekeeping; the next start prunes)
PRUNE_LOCK_MS = 200
#: connections per process (the writer, readers, the audit)
POOL_MAX = 8
#: how long a writer batch waits for a pooled connection before it counts the database as away
#: (then the writer keeps the batch and retries it, saying so: :mod:`acp_adapter.store.writer`)
BATCH_CONNECTION_WAIT_S = 1.0


class StoreUnreachable(StoreUnavailable):
    """The database cannot be reached at start (the message names host and port, never the password)."""


def driver_missing() -> StoreError:
    return StoreError(
        "the PostgreSQL store needs psycopg: pip install 'acp-progress[postgres]' "
        "(or unset ACP_PROGRESS_DATABASE_URL / [store] url to use the SQLite file)"
    )


class PostgresStore:
    """Sessions, permission audit and front-end state in PostgreSQL (schema ``acp_progress``)."""

    def __init__(
        self,
        url: str | DatabaseUrl,
        *,
        retry_for: float = RETRY_FOR_S,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        pool_max: int = POOL_MAX,
    ) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool, PoolTimeout
        except ImportError as exc:
            raise driver_missing() from exc
        self._psycopg = psycopg
        self._pool_timeout = PoolTimeout
        self.url = url if isinstance(url, DatabaseUrl) else DatabaseUrl.parse(url)
        self.retry_for = retry_for
        self._connect_kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(1, int(connect_timeout)),
            "application_name": "acp-progress",
        }
        self._local = threading.local()
        pool_log = logging.getLogger("psycopg.pool")
        if pool_log.level == logging.NOTSET:
            # its reconnect attempts are multi-line and repeat every second of an outage; this
            # store says once that the database is away and once that it is back
            pool_log.setLevel(logging.ERROR)
        with self._first_connection() as conn:
            migrate(conn, self.url.where())
            check_schema(conn, self.url.where())
        self._pool = ConnectionPool(
            self.url.raw,
            kwargs=self._connect_kwargs,
            min_size=1,
            max_size=pool_max,
            open=False,
            check=ConnectionPool.check_connection,
            timeout=max(1.0, connect_timeout),
            name="acp-progress-store",
        )
        self._pool.open(wait=False)

    # ------------------------------------------------------------------ connections

    @contextlib.contextmanager
    def _first_connection(self) -> Iterator[Any]:
        """A connection of its own for migrating: an unreachable database fails here, at start,
        with host and port named (:class:`StoreUnreachable`)."""
        try:
            conn = self._psycopg.connect(self.url.raw, **self._connect_kwargs)
        except self._psycopg.Error as exc:
            raise StoreUnreachable(
                f"cannot reach the session database at {self.url.where()} "
                f"({self.url.clean(_first_line(exc))})"
            ) from None
        try:
            yield conn
        except self._psycopg.Error as exc:
            raise StoreError(
                f"the session database at {self.url.where()} could not be prepared: "
                f"{self.url.clean(_first_line(exc))}"
            ) from None
        finally:
            conn.close()

    def is_transient(self, exc: BaseException) -> bool:
        """The connection broke or could not be made (the server restarted, a failover …)."""
        return isinstance(
            exc,
            StoreUnavailable
            | self._psycopg.OperationalError
            | self._psycopg.InterfaceError
            | self._pool_timeout,
        )

    def _unavailable(self, exc: BaseException) -> StoreUnavailable:
        return StoreUnavailable(
            f"the session database at {self.url.where()} is unavailable ({self.url.clean(_first_line(exc))})"
        )

    def _failed(self, exc: BaseException) -> StoreError:
        return StoreError(f"the session database at {self.url.where()}: {self.url.clean(_first_line(exc))}")

    @property
    def _batch_conn(self) -> Any | None:
        return getattr(self._local, "conn", None)

    def _run(self, op: Callable[[Any], T], *, retry_for: float | None = None, what: str = "a call") -> T:
        """``op(connection)`` on a pooled connection (inside :meth:`batch`: on the batch's, with no
        retry — the writer retries the batch whole). A broken connection is retried for
        ``retry_for`` seconds (default :attr:`retry_for`), said once in the log."""
        conn = self._batch_conn
        if conn is not None:
            try:
                return op(conn)
            except Exception as exc:
                raise (self._unavailable(exc) if self.is_transient(exc) else self._failed(exc)) from None
        window = self.retry_for if retry_for is None else retry_for
        deadline = time.monotonic() + window
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            try:
                with self._pool.connection(timeout=max(0.2, min(remaining, CONNECT_TIMEOUT_S))) as conn:
                    result = op(conn)
            except Exception as exc:
                if not self.is_transient(exc):
                    raise self._failed(exc) from None
                attempt += 1
                if time.monotonic() >= deadline:
                    raise self._unavailable(exc) from None
                if attempt == 1:
                    log.warning(
                        "the session database at %s is unavailable (%s); retrying %s for up to %g s",
                        self.url.where(),
                        self.url.clean(_first_line(exc)),
                        what,
                        window,
                    )
                time.sleep(min(0.1 * 2**attempt, 1.0, max(0.0, deadline - time.monotonic())))
                continue
            if attempt:
                log.warning(
                    "the session database at %s is back: %s went through after %d retries",
                    self.url.where(),
                    what,
                    attempt,
                )
            return result

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Run the writes made inside it as one transaction on one connection."""
        if self._batch_conn is not None:
            yield
            return
        try:
            with self._pool.connection(timeout=BATCH_CONNECTION_WAIT_S) as conn, conn.transaction():
                self._local.conn = conn
                try:
                    yield
                finally:
                    self._local.conn = None
        except StoreError:
            raise
        except Exception as exc:
            if self.is_transient(exc):
                raise self._unavailable(exc) from None
            if isinstance(exc, self._psycopg.Error):
                raise self._failed(exc) from None
            raise

    def ping(self, timeout: float = 2.0) -> bool:
        """Whether the database answers now (``/health``)."""
        try:
            with self._pool.connection(timeout=timeout) as conn:
                conn.execute("SELECT 1")
        except Exception:
            return False
        return True

    def describe(self) -> str:
        """Where sessions go, as a person may read it (the password hidden)."""
        return f"PostgreSQL {self.url.shown()}"

    # ------------------------------------------------------------------ sessions

    def upsert_session(self, record: SessionRecord) -> None:
        title = scrub(record.title) if record.title is not None else None
        self._run(
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

        self._run(op, what="saving a conversation")

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

        return self._run(op, what="trimming a conversation")

    def replace_history(self, session_id: str, history: Sequence[JsonObject]) -> None:
        body = dumps(scrub(list(history)))
        self._run(
            lambda db: db.execute(f"UPDATE {S}.sessions SET history = %s WHERE id = %s", (body, session_id)),
            what="saving a model history",
        )

    def load(self, session_id: str) -> StoredSession | None:
        def op(db: Any) -> tuple[Any, list[Any]] | None:
            with db.transaction():
                row = db.execute(
                    f"SELECT id, cwd, title, created_at, updated_at, history FROM {S}.sessions WHERE id = %s",
                    (session_id,),
                ).fetchone()
                if row is None:
                    return None
                events = db.execute(
                    f"SELECT body FROM {S}.events WHERE session_id = %s ORDER BY seq", (session_id,)
                ).fetchall()
                return row, events

        found = self._run(op, what="loading a session")
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
                return db.execute(
                    f"SELECT id, cwd, title, created_at, updated_at, history FROM {S}.sessions WHERE id = %s",
                    (new_id,),
                ).fetchone()

        row = self._run(op, what="forking a session")
        return None if row is None else stored_session(new_id, row, [])

    def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> SessionPage:
        sql, args = session_list_query(f"{S}.sessions", "%s", cwd, cursor, limit)
        rows = self._run(lambda db: db.execute(sql, args).fetchall(), what="listing sessions")
        return session_page(rows, limit)

    def delete(self, session_id: str) -> bool:
        return bool(
            self._run(
                lambda db: db.execute(f"DELETE FROM {S}.sessions WHERE id = %s", (session_id,)).rowcount > 0,
                what="deleting a session",
            )
        )

    def prune(self, older_than: float) -> int:
        """Remove sessions last used before ``older_than`` (and audit entries as old); waits at
        most :data:`PRUNE_LOCK_MS` for a row another process holds (housekeeping)."""

        def op(db: Any) -> int:
            with db.transaction():
                db.execute(f"SET LOCAL lock_timeout = '{PRUNE_LOCK_MS}ms'")
                db.execute(f"DELETE FROM {S}.permissions WHERE at < %s", (older_than,))
                return int(
                    db.execute(f"DELETE FROM {S}.sessions WHERE updated_at < %s", (older_than,)).rowcount
                )

        if self._batch_conn is not None:
            return self._run(op)
        return self._run(op, retry_for=0, what="pruning old sessions")

    # ------------------------------------------------------------------ permission audit

    def record_permission(self, decision: PermissionDecision) -> None:
        """Write one audit row durably and read it back, or raise :class:`AuditError` (the caller
        then refuses the call). Never inside a writer batch; bounded by :data:`AUDIT_WAIT_S`."""
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
        if self._batch_conn is not None:
            raise AuditError("the permission audit cannot be written inside a batch of other writes")

        def op(db: Any) -> Any:
            with db.transaction():
                db.execute(f"SET LOCAL statement_timeout = '{int(AUDIT_WAIT_S * 1000)}ms'")
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
            kept = self._run(op, retry_for=AUDIT_WAIT_S, what="writing a permission decision")
        except StoreError as exc:
            raise AuditError(str(exc)) from None
        check_audit_kept(kept, row, f"the session database at {self.url.where()}")

    def permission_audit(self, limit: int = 100) -> list[PermissionDecision]:
        rows = self._run(
            lambda db: db.execute(
                f"SELECT {AUDIT_COLUMNS} FROM {S}.permissions ORDER BY id DESC LIMIT %s",
                (limit,),
            ).fetchall(),
            what="reading the audit",
        )
        return audit_decisions(rows)

    # ------------------------------------------------------------------ front-end state

    def put(self, namespace: str, key: str, value: Any) -> None:
        body = dumps(scrub(value))
        self._run(
            lambda db: db.execute(
                f"INSERT INTO {S}.kv (namespace, key, value, updated_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (namespace, key) DO UPDATE SET "
                "value = excluded.value, updated_at = excluded.updated_at",
                (namespace, key, body, time.time()),
            ),
            what="saving front-end state",
        )

    def get(self, namespace: str, key: str) -> Any | None:
        rows = self._run(
            lambda db: db.execute(
                f"SELECT value FROM {S}.kv WHERE namespace = %s AND key = %s", (namespace, key)
            ).fetchall(),
            what="reading front-end state",
        )
        return json.loads(rows[0][0]) if rows else None

    def items(self, namespace: str) -> list[tuple[str, Any]]:
        rows = self._run(
            lambda db: db.execute(
                f"SELECT key, value FROM {S}.kv WHERE namespace = %s ORDER BY key", (namespace,)
            ).fetchall(),
            what="reading front-end state",
        )
        return [(key, json.loads(value)) for key, value in rows]

    def remove(self, namespace: str, key: str) -> None:
        self._run(
            lambda db: db.execute(f"DELETE FROM {S}.kv WHERE namespace = %s AND key = %s", (namespace, key)),
            what="removing front-end state",
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._pool.close(timeout=2.0)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.splitlines()[:1]) if text else type(exc).__name__
