"""The SQLite store's schema: its ordered migrations, and the check that a database holds exactly
what they create.

Why a module of its own: :class:`~acp_adapter.store.sqlite_database.SqliteDatabase` opens and locks
the file; what the file must contain is a separate question, answered here, as
:mod:`~acp_adapter.store.postgres_schema` answers it for PostgreSQL. The expected schema is built
from the migrations themselves (on a scratch database in memory), so the check never drifts from
them: a trigger, view or table this package did not create is refused, naming it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from acp_adapter.store.base import StoreError

SCHEMA_VERSION = 2


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


def _v2(db: sqlite3.Connection) -> None:
    """Schema 2: each audit row says which rule answered when nobody was asked (``mode auto``,
    ``always allow execute:ls``), or that the person's answer became such a rule."""
    db.execute("ALTER TABLE permissions ADD COLUMN rule TEXT NOT NULL DEFAULT ''")


#: ``MIGRATIONS[n]`` brings a database at schema ``n`` to ``n + 1``.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_v1, _v2)
assert len(MIGRATIONS) == SCHEMA_VERSION


class StoreSchemaError(StoreError):
    """The database holds triggers, views or tables this package did not create (or changed ones)."""


def _schema_rows(db: sqlite3.Connection) -> dict[tuple[str, str], str]:
    rows = db.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    return {(kind, name): " ".join((sql or "").split()) for kind, name, sql in rows}


def _expected_schema() -> dict[tuple[str, str], str]:
    """What :data:`MIGRATIONS` create, from a scratch database in memory (so the check can never
    drift from the migrations)."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for migrate in MIGRATIONS:
            migrate(db)
        return _schema_rows(db)
    finally:
        db.close()


def check_schema(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a database whose schema is not exactly the one :data:`MIGRATIONS` create.

    A trigger planted beside the tables runs inside every write (``AFTER INSERT ON permissions
    BEGIN DELETE …`` silences the audit); a view or a table of someone else's has no business in
    a private store. SQLite's own statistics tables (``sqlite_stat*``, from ``ANALYZE``) are fine.
    """
    expected = _expected_schema()
    found = _schema_rows(db)
    strange: list[str] = []
    for (kind, name), sql in sorted(found.items()):
        if kind == "table" and name.startswith("sqlite_stat"):
            continue
        want = expected.get((kind, name))
        if want is None:
            strange.append(f"{kind} {name!r}")
        elif want != sql:
            strange.append(f"{kind} {name!r} (changed)")
    missing = sorted(f"{kind} {name!r}" for kind, name in expected.keys() - found.keys())
    if strange or missing:
        parts = []
        if strange:
            parts.append("holds " + ", ".join(strange) + " that acp-progress did not create")
        if missing:
            parts.append("lacks " + ", ".join(missing))
        raise StoreSchemaError(
            "the session database " + " and ".join(parts) + "; it was not used (someone may have "
            f"tampered with it: a trigger can hide or change the permission audit). Look at {path}, "
            f"then move it aside (mv {path} {path}.suspect) to start a fresh one"
        )
