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
* **Directory 0700, files 0600** — conversations are private to the user.
* **One connection guarded by a lock** (``check_same_thread=False``) — the store is used from the
  background writer thread and from request handlers; SQLite serialises writes anyway.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from acp_adapter.store.base import (
    JsonObject,
    PermissionDecision,
    SessionPage,
    SessionRecord,
    StoredSession,
    StoreError,
    StoreVersionError,
    dumps,
    scrub,
)

log = logging.getLogger("acp_progress.store")

DATABASE_NAME = "sessions.sqlite3"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 10.0

#: SQLite's primary result codes that mean "this file is not a sound database"
_CORRUPT_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
#: … and those that mean "another connection holds the lock": the file is fine, wait for it
_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


class _IntegrityError(StoreError):
    """``PRAGMA quick_check`` found the database damaged."""


def _primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_corrupt(exc: BaseException) -> bool:
    """True only for errors that say the file itself is damaged or not a database."""
    if isinstance(exc, _IntegrityError):
        return True
    return isinstance(exc, sqlite3.Error) and _primary_code(exc) in _CORRUPT_CODES


def is_busy(exc: BaseException) -> bool:
    """True for "database is locked"/"busy": another connection holds the lock."""
    return isinstance(exc, sqlite3.Error) and _primary_code(exc) in _BUSY_CODES


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Each statement of ``script`` inside the caller's transaction (``executescript`` would
    commit it first, and a migration must be all or nothing)."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _v1(db: sqlite3.Connection) -> None:
    _run_script(
        db,
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            cwd TEXT NOT NULL,
            title TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            history TEXT NOT NULL DEFAULT '[]'
        );
        CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, id);
        CREATE INDEX sessions_by_time ON sessions (updated_at DESC, id);
        CREATE TABLE events (
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        );
        CREATE TABLE permissions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at REAL NOT NULL,
            session_id TEXT NOT NULL,
            tool_call_id TEXT NOT NULL,
            title TEXT NOT NULL,
            allowed INTEGER NOT NULL,
            decided_by TEXT NOT NULL,
            surface TEXT NOT NULL
        );
        CREATE TABLE kv (
            namespace TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (namespace, key)
        );
        """,
    )


#: ``MIGRATIONS[n]`` brings a database at schema ``n`` to ``n + 1``.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_v1,)
assert len(MIGRATIONS) == SCHEMA_VERSION


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)


def _move_aside(path: Path, reason: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    for suffix in ("", "-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            side.replace(Path(f"{target}{suffix}"))
    log.error(
        "the session database %s is unreadable (%s); moved it to %s and started a fresh one",
        path,
        reason,
        target,
    )
    return target


def _encode_cursor(updated_at: float, session_id: str) -> str:
    raw = dumps([updated_at, session_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        updated_at, session_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(session_id, str) or not isinstance(updated_at, int | float):
            raise ValueError
        return float(updated_at), session_id
    except (ValueError, TypeError) as exc:
        raise StoreError(f"invalid cursor {cursor[:40]!r}: not one this agent gave out") from exc


class SqliteStore:
    """Sessions, permission audit and front-end state in one SQLite file."""

    def __init__(self, directory: Path, *, busy_timeout: float | None = None) -> None:
        self.directory = directory
        _private_dir(directory)
        self.path = directory / DATABASE_NAME
        self._lock = threading.Lock()
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
            _move_aside(self.path, str(exc))
            self._db = self._open_waiting()

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

    def _open(self, wait: float) -> sqlite3.Connection:
        fresh = not self.path.exists()
        if fresh:  # create it 0600 before SQLite does (its default follows the umask)
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        db = sqlite3.connect(self.path, timeout=wait, check_same_thread=False, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA foreign_keys = ON")
            db.execute("PRAGMA synchronous = NORMAL")
            check = db.execute("PRAGMA quick_check").fetchone()
            if check is None or check[0] != "ok":
                raise _IntegrityError(f"integrity check failed: {check[0] if check else 'no answer'}")
            self._migrate(db)
            # once open, every later statement waits the full busy timeout for another process
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        except BaseException:
            db.close()
            raise
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.chmod(f"{self.path}{suffix}", 0o600)
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
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
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

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
        if self._in_batch:
            return self._db.execute(sql, args).fetchall()
        with self._lock:
            return self._db.execute(sql, args).fetchall()

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
        if not events:
            return
        bodies = [dumps(scrub(event)) for event in events]
        with self._tx() as db:
            row = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,))
            start = row.fetchone()[0] + 1
            db.executemany(
                "INSERT INTO events (session_id, seq, body) VALUES (?, ?, ?)",
                [(session_id, start + i, body) for i, body in enumerate(bodies)],
            )
            db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (updated_at, session_id))

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
        sid, cwd, title, created, updated, history = rows[0]
        events = self._read("SELECT body FROM events WHERE session_id = ? ORDER BY seq", (session_id,))
        return StoredSession(
            SessionRecord(sid, cwd, title, created, updated),
            [json.loads(body) for (body,) in events],
            json.loads(history),
        )

    def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> SessionPage:
        where: list[str] = []
        args: list[Any] = []
        if cwd is not None:
            where.append("cwd = ?")
            args.append(cwd)
        if cursor is not None:
            after_time, after_id = _decode_cursor(cursor)
            where.append("(updated_at < ? OR (updated_at = ? AND id > ?))")
            args += [after_time, after_time, after_id]
        sql = "SELECT id, cwd, title, created_at, updated_at FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC, id LIMIT ?"
        rows = self._read(sql, [*args, limit + 1])
        records = [SessionRecord(*row) for row in rows[:limit]]
        more = len(rows) > limit
        next_cursor = _encode_cursor(records[-1].updated_at, records[-1].session_id) if more else None
        return SessionPage(records, next_cursor)

    def delete(self, session_id: str) -> bool:
        with self._tx() as db:
            return db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    def prune(self, older_than: float) -> int:
        """Remove sessions last used before ``older_than`` (and audit entries as old); returns
        how many sessions went."""
        with self._tx() as db:
            db.execute("DELETE FROM permissions WHERE at < ?", (older_than,))
            return db.execute("DELETE FROM sessions WHERE updated_at < ?", (older_than,)).rowcount

    # ------------------------------------------------------------------ permission audit

    def record_permission(self, decision: PermissionDecision) -> None:
        d = decision
        with self._tx() as db:
            db.execute(
                "INSERT INTO permissions (at, session_id, tool_call_id, title, allowed, decided_by, surface) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    d.at,
                    d.session_id,
                    d.tool_call_id,
                    scrub(d.title),
                    int(d.allowed),
                    scrub(d.decided_by),
                    d.surface,
                ),
            )

    def permission_audit(self, limit: int = 100) -> list[PermissionDecision]:
        rows = self._read(
            "SELECT at, session_id, tool_call_id, title, allowed, decided_by, surface FROM permissions "
            "ORDER BY id DESC LIMIT ?",
            (limit,),
        )
        return [
            PermissionDecision(at, sid, tcid, title, bool(ok), by, surface)
            for at, sid, tcid, title, ok, by, surface in rows
        ]

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
