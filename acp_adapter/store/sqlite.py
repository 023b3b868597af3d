"""The SQLite session store: one database file in the state directory, shared safely by every
acp-progress process of the user (two editor windows, a bridge, the AG-UI server).

Why each choice:

* **WAL and a busy timeout** — readers never block the writer and two processes writing at once
  wait for each other instead of failing with "database is locked".
* **``PRAGMA user_version`` as the schema version, with ordered migrations** — an older database
  is brought up to date on open; a newer one (written by a later acp-progress) is refused with a
  message that says so, rather than read wrongly or "upgraded" into something the newer version
  no longer understands.
* **A corrupt file is moved aside, never deleted** — the agent must keep working, and nothing is
  lost silently: the file (and its ``-wal``/``-shm``) become ``….corrupt-<time>``, one error line
  names it, and a fresh database is used. Only real corruption does this (SQLite says
  ``SQLITE_CORRUPT`` or ``SQLITE_NOTADB``, or ``quick_check`` fails): a database that is merely
  busy — another process holds its lock past the busy timeout — is healthy and in use, so moving
  it (and its WAL) aside would split one store in two. Busy is retried until the busy timeout;
  then, as for any other error (an unwritable directory, a full disk), :class:`StoreError` is
  raised and the caller keeps sessions in memory, leaving the file alone.
* **Directory 0700, files 0600, checked** — conversations are private to the user. The state
  directory is used only when it is yours and nobody else may write it (the ssh rule, see
  :mod:`acp_adapter.safety.private_path`); the database and its ``-wal``, ``-shm`` and
  ``-journal`` files are created 0600 and, when they already exist, refused unless they are yours
  and private (a 0666 ``-wal`` planted beforehand would let another user read the conversation).
  ``secure_delete`` overwrites what is deleted.
* **The schema is checked, not assumed** — a trigger, view or table this package did not create
  (``AFTER INSERT ON permissions BEGIN DELETE …`` silences the audit) is refused at open, naming
  it; ``trusted_schema = OFF`` keeps functions with side effects out of the schema anyway.
* **The audit fails closed** — :meth:`SqliteStore.record_permission` writes its row in its own
  transaction, synced (``synchronous = FULL``), then reads it back; any failure (disk full, a lock
  held past :data:`BUSY_TIMEOUT_S`, a trigger raising or deleting the row) raises
  :class:`~acp_adapter.store.base.AuditError`, and the caller refuses the call.
* **Waits are bounded** — no statement waits more than :data:`BUSY_TIMEOUT_S` (2 s) for another
  process's lock; reads use a connection of their own (WAL readers never wait for writers), so
  ``session/list`` answers while the writer thread waits.
* **One connection guarded by a lock** (``check_same_thread=False``) — the store is used from the
  background writer thread and from request handlers; SQLite serialises writes anyway.

This module opens, locks, reads and writes; the schema and its check are in
:mod:`~acp_adapter.store.sqlite_schema`, the file's privacy and corruption handling in
:mod:`~acp_adapter.store.sqlite_file`, the SQL shared with PostgreSQL in
:mod:`~acp_adapter.store.queries`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from acp_adapter.safety.private_path import PRIVATE_FILE_MODE, make_private_dir
from acp_adapter.store.base import (
    AuditError,
    JsonObject,
    PermissionDecision,
    SessionGone,
    SessionPage,
    SessionRecord,
    StoredSession,
    StoreError,
    StoreVersionError,
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
from acp_adapter.store.sqlite_file import (
    IntegrityCheckFailed,
    check_side_files,
    is_busy,
    is_corrupt,
    move_aside,
)
from acp_adapter.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, StoreSchemaError, check_schema

#: the names other modules import from here (the schema's, now in :mod:`.sqlite_schema`, included)
__all__ = [
    "BUSY_TIMEOUT_S",
    "DATABASE_NAME",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SqliteStore",
    "StoreSchemaError",
    "is_busy",
    "is_corrupt",
]

log = logging.getLogger("acp_progress.store")

DATABASE_NAME = "sessions.sqlite3"
#: the longest any statement waits for a lock another process holds (a busy store answers
#: within 2 s instead of hanging the turn)
BUSY_TIMEOUT_S = 2.0
#: the longest the start-up pruning waits for another process's lock (it is only housekeeping)
PRUNE_WAIT_S = 0.2


class SqliteStore:
    """Sessions, permission audit and front-end state in one SQLite file."""

    def __init__(self, directory: Path, *, busy_timeout: float | None = None) -> None:
        self.directory = directory
        # the ssh rule: yours, writable by nobody else, made 0700 (parents too) whatever the umask
        make_private_dir(directory, what="the state directory")
        self.path = directory / DATABASE_NAME
        check_side_files(self.path)
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()
        #: how long a lock held by another process is waited for (default :data:`BUSY_TIMEOUT_S`)
        self.busy_timeout = BUSY_TIMEOUT_S if busy_timeout is None else busy_timeout
        try:
            self._db = self._open_waiting()
        except StoreVersionError:
            raise
        except (sqlite3.Error, StoreError) as exc:
            if isinstance(exc, StoreError) and not is_corrupt(exc):  # busy past the timeout
                raise
            if not is_corrupt(exc):  # unwritable, I/O, full disk: the file stays put
                raise StoreError(f"cannot open the session database {self.path}: {exc}") from exc
            move_aside(self.path, str(exc))
            self._db = self._open_waiting()
        try:
            self._reader = self._connect(self.busy_timeout)
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(f"cannot open the session database {self.path}: {exc}") from exc

    # ------------------------------------------------------------------ opening and migrating

    def _open_waiting(self) -> sqlite3.Connection:
        """:meth:`_open`, tried again while another process holds the database's lock, until
        the busy timeout has passed in all (SQLite's own busy handler does not cover every step
        of opening, e.g. WAL recovery or switching the journal mode)."""
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                return self._open(max(0.0, deadline - time.monotonic()))
            except sqlite3.Error as exc:
                if not is_busy(exc) or time.monotonic() >= deadline:
                    if is_busy(exc):
                        raise StoreError(
                            f"the session database {self.path} stayed locked by another process "
                            f"for {self.busy_timeout:g} s ({exc})"
                        ) from exc
                    raise
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def _connect(self, wait: float) -> sqlite3.Connection:
        """A connection with this store's settings (SQLite makes ``-wal``/``-shm``/``-journal``
        with the database's own mode, so they are 0600 too; :func:`check_side_files` checks)."""
        db = sqlite3.connect(self.path, timeout=wait, check_same_thread=False, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
            db.execute("PRAGMA trusted_schema = OFF")
            db.execute("PRAGMA secure_delete = ON")
            db.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            db.close()
            raise
        return db

    def _open(self, wait: float) -> sqlite3.Connection:
        # create it 0600 before SQLite does (its default follows the umask); one that exists
        # (or appears meanwhile) is checked instead, never taken over with a chmod
        try:
            flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0)
            os.close(os.open(self.path, flags, PRIVATE_FILE_MODE))
        except FileExistsError:
            pass
        check_side_files(self.path)
        db = self._connect(wait)
        try:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            check = db.execute("PRAGMA quick_check").fetchone()
            if check is None or check[0] != "ok":
                raise IntegrityCheckFailed(f"integrity check failed: {check[0] if check else 'no answer'}")
            self._migrate(db)
            check_schema(db, self.path)
            # once open, every later statement waits the full busy timeout for another process
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            check_side_files(self.path)
        except BaseException:
            db.close()
            raise
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        # an up-to-date database is only read: opening never waits for a write lock another
        # process holds (the audit write then fails closed instead of the open falling back)
        if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return
        with self._write(db):
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreVersionError(
                    f"the session database {self.path} was written by a newer acp-progress "
                    f"(schema {version}; this version reads up to {SCHEMA_VERSION}); "
                    "upgrade acp-progress or point ACP_PROGRESS_STATE_DIR elsewhere"
                )
            for step in range(version, SCHEMA_VERSION):
                MIGRATIONS[step](db)
            if version != SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextlib.contextmanager
    def _write(self, db: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken up front (``BEGIN IMMEDIATE``) so two processes never
        deadlock upgrading a read lock."""
        conn = db if db is not None else self._db
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk); a failed COMMIT leaves it open
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Run several writes as one transaction (the background writer batches this way)."""
        with self._lock, self._write():
            self._batch_owner = threading.get_ident()
            try:
                yield
            finally:
                self._batch_owner = None

    _batch_owner: int | None = None

    @property
    def _in_batch(self) -> bool:
        """True in the thread that runs a :meth:`batch` (it holds the lock and the transaction)."""
        return self._batch_owner == threading.get_ident()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        if self._in_batch:  # already inside batch(): same thread holds the lock and the transaction
            yield self._db
            return
        with self._lock, self._write() as db:
            yield db

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """Inside :meth:`batch`, on its connection (it sees its own writes); otherwise on the
        reading connection, which never waits for the writer thread (WAL readers do not block)."""
        if self._in_batch:
            return self._db.execute(sql, args).fetchall()
        if not self._read_lock.acquire(timeout=self.busy_timeout):
            raise StoreError(f"the session database {self.path} is busy; try again")
        try:
            return self._reader.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the session database {self.path}: {exc}") from exc
        finally:
            self._read_lock.release()

    # ------------------------------------------------------------------ sessions

    def upsert_session(self, record: SessionRecord) -> None:
        title = scrub(record.title) if record.title is not None else None
        with self._tx() as db:
            db.execute(
                "INSERT INTO sessions (id, cwd, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET cwd = excluded.cwd, "
                "title = COALESCE(excluded.title, sessions.title), updated_at = excluded.updated_at",
                (record.session_id, record.cwd, title, record.created_at, record.updated_at),
            )

    def append_events(self, session_id: str, events: Sequence[JsonObject], updated_at: float) -> None:
        bodies = [dumps(scrub(event)) for event in events]
        with self._tx() as db:
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
        with self._tx() as db:
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
        with self._tx() as db:
            db.execute("UPDATE sessions SET history = ? WHERE id = ?", (body, session_id))

    def load(self, session_id: str) -> StoredSession | None:
        rows = self._read(
            "SELECT id, cwd, title, created_at, updated_at, history FROM sessions WHERE id = ?", (session_id,)
        )
        if not rows:
            return None
        events = self._read("SELECT body FROM events WHERE session_id = ? ORDER BY seq", (session_id,))
        return stored_session(session_id, rows[0], events)

    def fork(self, source_id: str, new_id: str, cwd: str, now: float) -> StoredSession | None:
        session_sql, events_sql = fork_statements("", "?")
        session_args, events_args = fork_args(source_id, new_id, cwd, now)
        with self._tx() as db:
            if db.execute(session_sql, session_args).rowcount == 0:
                return None
            db.execute(events_sql, events_args)
            row = db.execute(
                "SELECT id, cwd, title, created_at, updated_at, history FROM sessions WHERE id = ?", (new_id,)
            ).fetchone()
        return stored_session(new_id, row, [])

    def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> SessionPage:
        sql, args = session_list_query("sessions", "?", cwd, cursor, limit)
        return session_page(self._read(sql, args), limit)

    def delete(self, session_id: str) -> bool:
        with self._tx() as db:
            return db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    def prune(self, older_than: float) -> int:
        """Remove sessions last used before ``older_than`` (and audit entries as old); returns
        how many sessions went.

        Housekeeping, done as an agent starts: it waits at most :data:`PRUNE_WAIT_S` for a lock
        another process holds (then raises; the next start prunes), so a held database does not
        delay every start by the full busy timeout."""
        if self._in_batch:
            return self._prune(older_than)
        with self._lock:
            self._db.execute(f"PRAGMA busy_timeout = {int(PRUNE_WAIT_S * 1000)}")
            try:
                with self._write():
                    return self._prune(older_than)
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")

    def _prune(self, older_than: float) -> int:
        db = self._db
        db.execute("DELETE FROM permissions WHERE at < ?", (older_than,))
        rowcount: int = db.execute("DELETE FROM sessions WHERE updated_at < ?", (older_than,)).rowcount
        return rowcount

    # ------------------------------------------------------------------ permission audit

    def record_permission(self, decision: PermissionDecision) -> None:
        """Write one audit row durably, or raise :class:`AuditError` (the caller then refuses the
        call: an allowed command never runs unrecorded).

        Its own transaction (never a writer batch, which may fail later), synced to disk
        (``synchronous = FULL``), then read back by its rowid: a trigger that deletes or changes
        the row, planted after this store was opened, is caught too. The whole wait — for the
        writer thread and for another process's lock — is bounded by :data:`BUSY_TIMEOUT_S`.
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
        if self._in_batch:  # the writer thread never audits; if it did, its batch is not durable yet
            raise AuditError("the permission audit cannot be written inside a batch of other writes")
        deadline = time.monotonic() + self.busy_timeout
        if not self._lock.acquire(timeout=self.busy_timeout):
            raise AuditError(f"the session database {self.path} stayed busy for {self.busy_timeout:g} s")
        try:
            db = self._db
            wait_ms = max(1, int((deadline - time.monotonic()) * 1000))
            db.execute(f"PRAGMA busy_timeout = {wait_ms}")
            db.execute("PRAGMA synchronous = FULL")
            try:
                with self._write(db):
                    rowid = db.execute(
                        f"INSERT INTO permissions ({AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        row,
                    ).lastrowid
                kept = db.execute(
                    f"SELECT {AUDIT_COLUMNS} FROM permissions WHERE id = ?",
                    (rowid,),
                ).fetchone()
            finally:
                db.execute("PRAGMA synchronous = NORMAL")
                db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        except sqlite3.Error as exc:
            why = (
                f"is locked by another process (waited {self.busy_timeout:g} s)"
                if is_busy(exc)
                else f"failed: {exc}"
            )
            raise AuditError(f"the session database {why}: {self.path}") from exc
        finally:
            self._lock.release()
        check_audit_kept(kept, row, str(self.path))

    def permission_audit(self, limit: int = 100) -> list[PermissionDecision]:
        return audit_decisions(
            self._read(f"SELECT {AUDIT_COLUMNS} FROM permissions ORDER BY id DESC LIMIT ?", (limit,))
        )

    # ------------------------------------------------------------------ front-end state

    def put(self, namespace: str, key: str, value: Any) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO kv (namespace, key, value, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (namespace, key) DO UPDATE SET "
                "value = excluded.value, updated_at = excluded.updated_at",
                (namespace, key, dumps(scrub(value)), time.time()),
            )

    def get(self, namespace: str, key: str) -> Any | None:
        rows = self._read("SELECT value FROM kv WHERE namespace = ? AND key = ?", (namespace, key))
        return json.loads(rows[0][0]) if rows else None

    def items(self, namespace: str) -> list[tuple[str, Any]]:
        rows = self._read("SELECT key, value FROM kv WHERE namespace = ? ORDER BY key", (namespace,))
        return [(key, json.loads(value)) for key, value in rows]

    def remove(self, namespace: str, key: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM kv WHERE namespace = ? AND key = ?", (namespace, key))

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()
        with self._read_lock, contextlib.suppress(sqlite3.Error):
            self._reader.close()
