"""The PostgreSQL store's schema: versioned migrations, applied once however many processes start.

Why each choice:

* **Its own schema (``acp_progress``)** — the database is usually one a web app already uses; the
  store's tables never mix with its tables, and the check below looks only at this schema.
* **A table of applied versions, filled under an advisory lock** — ten replicas starting at once
  all call :func:`migrate`; ``pg_advisory_xact_lock`` lets one apply the missing versions while
  the others wait, then find nothing left to do. The lock is the transaction's: a process killed
  mid-migration releases it and its half-done work is rolled back.
* **A newer database is refused** (:class:`StoreVersionError`), as with SQLite: read wrongly or
  "upgraded" back, it would be damaged for the newer version that wrote it.
* **The schema is checked, not assumed** — a trigger on the audit table (``AFTER INSERT …
  DELETE``) silences the audit; a table of someone else's in this schema has no business there.
  Either is refused at start, naming it.
"""

from __future__ import annotations

import logging
from typing import Any

from acp_adapter.store.base import StoreError, StoreVersionError

log = logging.getLogger("acp_progress.store")

SCHEMA = "acp_progress"
#: ``pg_advisory_xact_lock`` key of the migration (a constant all versions agree on)
MIGRATION_LOCK = 0x4163_7050_6D69_6772  # "AcpPmigr"

#: ``MIGRATIONS[n]`` brings the schema from version ``n`` to ``n + 1``; one SQL text each
MIGRATIONS: tuple[str, ...] = (
    f"""
    CREATE TABLE {SCHEMA}.sessions (
        id TEXT COLLATE "C" PRIMARY KEY,
        cwd TEXT NOT NULL,
        title TEXT,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        history TEXT NOT NULL DEFAULT '[]'
    );
    CREATE INDEX sessions_by_cwd ON {SCHEMA}.sessions (cwd, updated_at DESC, id);
    CREATE INDEX sessions_by_time ON {SCHEMA}.sessions (updated_at DESC, id);
    CREATE TABLE {SCHEMA}.events (
        session_id TEXT NOT NULL REFERENCES {SCHEMA}.sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE {SCHEMA}.permissions (
        id BIGSERIAL PRIMARY KEY,
        at DOUBLE PRECISION NOT NULL,
        session_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        title TEXT NOT NULL,
        allowed BOOLEAN NOT NULL,
        decided_by TEXT NOT NULL,
        surface TEXT NOT NULL
    );
    CREATE INDEX permissions_by_time ON {SCHEMA}.permissions (at);
    CREATE TABLE {SCHEMA}.kv (
        namespace TEXT NOT NULL,
        key TEXT COLLATE "C" NOT NULL,
        value TEXT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (namespace, key)
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)

#: the tables the migrations create (the check refuses any other table in the schema)
TABLES = frozenset({"schema_migrations", "sessions", "events", "permissions", "kv"})


def migrate(conn: Any, where: str) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION` on ``conn`` (a psycopg connection in autocommit
    mode); returns how many versions were applied (0 when another process did it first)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_signed(MIGRATION_LOCK),))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA}.schema_migrations "
            "(version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        row = conn.execute(f"SELECT COALESCE(MAX(version), 0) FROM {SCHEMA}.schema_migrations").fetchone()
        version = int(row[0])
        if version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"the session database at {where} was written by a newer acp-progress (schema "
                f"{version}; this version reads up to {SCHEMA_VERSION}); upgrade acp-progress"
            )
        for step in range(version, SCHEMA_VERSION):
            conn.execute(MIGRATIONS[step])
            conn.execute(f"INSERT INTO {SCHEMA}.schema_migrations (version) VALUES (%s)", (step + 1,))
        applied = SCHEMA_VERSION - version
    if applied:
        log.info(
            "session database at %s: applied %d schema migration(s), now at %d",
            where,
            applied,
            SCHEMA_VERSION,
        )
    return applied


class StorePgSchemaError(StoreError):
    """The store's schema holds triggers, rules or tables this package did not create."""


def check_schema(conn: Any, where: str) -> None:
    """Refuse a schema with a trigger or rule on the store's tables, or a table it did not make."""
    strange: list[str] = []
    for (name,) in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'v', 'm', 'p', 'f')",
        (SCHEMA,),
    ).fetchall():
        if name not in TABLES:
            strange.append(f"table {name!r}")
    for name, table in conn.execute(
        "SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND NOT t.tgisinternal",
        (SCHEMA,),
    ).fetchall():
        strange.append(f"trigger {name!r} on {table}")
    for name, table in conn.execute(
        "SELECT rulename, tablename FROM pg_rules WHERE schemaname = %s", (SCHEMA,)
    ).fetchall():
        strange.append(f"rule {name!r} on {table}")
    if strange:
        raise StorePgSchemaError(
            f"the session database at {where} holds {', '.join(sorted(strange))} in schema "
            f"{SCHEMA!r} that acp-progress did not create; it was not used (a trigger can hide or "
            "change the permission audit). Remove them, then start again"
        )


def _signed(key: int) -> int:
    """A 64-bit key as PostgreSQL's signed ``bigint``."""
    return key - (1 << 64) if key >= 1 << 63 else key
