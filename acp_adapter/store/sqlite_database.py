"""The SQLite session database, open: one file in the state directory, shared safely by every
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
* **Waits are bounded** — no statement waits more than :data:`BUSY_TIMEOUT_S` (2 s) for another
  process's lock; reads use a connection of their own (WAL readers never wait for writers), so
  ``session/list`` answers while the writer thread waits.
* **One writing connection guarded by a lock** (``check_same_thread=False``) — the store is used
  from the background writer thread and from request handlers; SQLite serialises writes anyway.

This module opens the file and hands out its transactions; what is written in them is the
store's parts' business (:mod:`~acp_adapter.store.sqlite_tables`,
:mod:`~acp_adapter.store.kv_table`); the schema and its check are in
:mod:`~acp_adapter.store.sqlite_schema`, the file's privacy and corruption handling in
:mod:`~acp_adapter.store.sqlite_file`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from acp_adapter.safety.private_path import PRIVATE_FILE_MODE, make_private_dir
from acp_adapter.store.base import StoreError, StoreVersionError
from acp_adapter.store.sqlite_file import (
    IntegrityCheckFailed,
    check_side_files,
    is_busy,
    is_corrupt,
    move_aside,
)
from acp_adapter.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, check_schema

T = TypeVar("T")

DATABASE_NAME = "sessions.sqlite3"
#: the longest any statement waits for a lock another process holds (a busy store answers
#: within 2 s instead of hanging the turn)
BUSY_TIMEOUT_S = 2.0


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction on ``conn``, taken up front (``BEGIN IMMEDIATE``) so two processes
    never deadlock upgrading a read lock."""
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


class SqliteDatabase:
    """The open database file: its writing connection behind one lock, its reading connection,
    and the transactions the store's parts write in."""

    mark = "?"
    prefix = ""

    def __init__(self, directory: Path, *, busy_timeout: float | None = None) -> None:
        # the ssh rule: yours, writable by nobody else, made 0700 (parents too) whatever the umask
        make_private_dir(directory, what="the state directory")
        self.path = directory / DATABASE_NAME
        check_side_files(self.path)
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._batch_owner: int | None = None
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
            self._wait_for_locks(db, self.busy_timeout)
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
        with immediate(db):
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

    @staticmethod
    def _wait_for_locks(db: sqlite3.Connection, seconds: float) -> None:
        db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    # ------------------------------------------------------------------ transactions

    @contextlib.contextmanager
    def batch(self, *, busy_wait: float | None = None) -> Iterator[None]:
        """Run several writes as one transaction (the background writer batches this way; inside
        a batch already, the writes join it). ``busy_wait`` shortens, for this transaction only,
        the wait for another process's lock (housekeeping that may as well be skipped)."""
        if self.in_batch:
            yield
            return
        with self._lock:
            if busy_wait is not None:
                self._wait_for_locks(self._db, busy_wait)
            try:
                with immediate(self._db):
                    self._batch_owner = threading.get_ident()
                    try:
                        yield
                    finally:
                        self._batch_owner = None
            finally:
                if busy_wait is not None:
                    self._wait_for_locks(self._db, self.busy_timeout)

    @property
    def in_batch(self) -> bool:
        """True in the thread that runs a :meth:`batch` (it holds the lock and the transaction)."""
        return self._batch_owner == threading.get_ident()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The writing connection in a write transaction of its own (inside :meth:`batch`: the
        batch's, which this thread already holds)."""
        if self.in_batch:
            yield self._db
            return
        with self._lock, immediate(self._db) as db:
            yield db

    def write(self, op: Callable[[sqlite3.Connection], T], what: str = "a write") -> T:
        """``op`` in :meth:`transaction` (``what`` is for the PostgreSQL store's log; SQLite's
        errors name the database themselves)."""
        with self.transaction() as db:
            return op(db)

    def read(self, sql: str, args: Sequence[Any] = (), what: str = "a read") -> list[Any]:
        """Inside :meth:`batch`, on its connection (it sees its own writes); otherwise on the
        reading connection, which never waits for the writer thread (WAL readers do not block)."""
        if self.in_batch:
            return self._db.execute(sql, args).fetchall()
        if not self._read_lock.acquire(timeout=self.busy_timeout):
            raise StoreError(f"the session database {self.path} is busy; try again")
        try:
            return self._reader.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the session database {self.path}: {exc}") from exc
        finally:
            self._read_lock.release()

    @contextlib.contextmanager
    def synced(self) -> Iterator[sqlite3.Connection]:
        """The writing connection, held alone, with every commit synced to disk (``synchronous =
        FULL``) until the block ends; the whole wait — for this process's lock and for another
        process's — stays within the busy timeout. :class:`TimeoutError` when this process's lock
        stays held past it; :class:`sqlite3.Error` from the statements as they fail."""
        deadline = time.monotonic() + self.busy_timeout
        if not self._lock.acquire(timeout=self.busy_timeout):
            raise TimeoutError(f"the session database {self.path} stayed busy for {self.busy_timeout:g} s")
        try:
            db = self._db
            self._wait_for_locks(db, max(0.001, deadline - time.monotonic()))
            db.execute("PRAGMA synchronous = FULL")
            try:
                yield db
            finally:
                db.execute("PRAGMA synchronous = NORMAL")
                self._wait_for_locks(db, self.busy_timeout)
        finally:
            self._lock.release()

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()
        with self._read_lock, contextlib.suppress(sqlite3.Error):
            self._reader.close()
