"""The SQLite database as a file on disk: kept private, told apart when corrupt from merely busy,
and moved aside (never deleted) when it is damaged.

Why a module of its own: these are questions about the file and SQLite's error codes, asked before
and while :class:`~acp_adapter.store.sqlite_database.SqliteDatabase` opens it: are the database and its
``-wal``/``-shm``/``-journal`` files yours and 0600, does this error mean "damaged" (move the file
aside and start afresh) or "another process holds the lock" (wait; the file is healthy and in use).
"""

from __future__ import annotations

import logging
import sqlite3
import stat
import time
from pathlib import Path

from acp_adapter.safety.private_path import UnsafePathError, check_private
from acp_adapter.store.base import StoreError

log = logging.getLogger("acp_progress.store")

#: the files SQLite keeps beside the database (each must be as private as the database)
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")

#: SQLite's primary result codes that mean "this file is not a sound database"
_CORRUPT_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
#: … and those that mean "another connection holds the lock": the file is fine, wait for it
_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


class IntegrityCheckFailed(StoreError):
    """``PRAGMA quick_check`` found the database damaged."""


def _primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_corrupt(exc: BaseException) -> bool:
    """True only for errors that say the file itself is damaged or not a database."""
    if isinstance(exc, IntegrityCheckFailed):
        return True
    return isinstance(exc, sqlite3.Error) and _primary_code(exc) in _CORRUPT_CODES


def is_busy(exc: BaseException) -> bool:
    """True for "database is locked"/"busy": another connection holds the lock."""
    return isinstance(exc, sqlite3.Error) and _primary_code(exc) in _BUSY_CODES


def check_side_files(path: Path) -> None:
    """The database and the files SQLite keeps beside it, when they exist: yours, regular, 0600."""
    for suffix in ("", *SIDE_SUFFIXES):
        side = Path(f"{path}{suffix}")
        if side.is_symlink() and not side.exists():  # SQLite would create its target, anywhere
            raise UnsafePathError(
                f"the session database file {side} is a link to a file that does not exist; remove it"
            )
        try:
            st = check_private(side, what="the session database file", readable_by_others=False)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePathError(f"the session database file {side} is not a regular file; remove it")


def move_aside(path: Path, reason: str) -> Path:
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
