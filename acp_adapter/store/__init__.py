"""Durable state: sessions (the canonical conversation), the permission audit, and the small
state front-ends keep (a chat's session, an update offset, a thread's session).

SQLite in the user's state directory by default; PostgreSQL when a database URL is set (shared by
every process on every machine); in memory when state is off or the SQLite database cannot be
used. :func:`open_store` chooses, and never stops the agent over a SQLite file (a shared database
that cannot be reached is an error: see there).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path

from acp_adapter.store.base import (
    AuditError,
    JsonObject,
    KeyValueStore,
    PermissionDecision,
    SessionGone,
    SessionPage,
    SessionRecord,
    SessionStore,
    StoredSession,
    StoreError,
    StoreUnavailable,
    StoreVersionError,
)
from acp_adapter.store.memory import MemoryStore
from acp_adapter.store.sqlite import SqliteStore
from acp_adapter.store.sqlite_database import DATABASE_NAME
from acp_adapter.store.sqlite_schema import SCHEMA_VERSION, StoreSchemaError
from acp_adapter.store.writer import BackgroundWriter

__all__ = [
    "DATABASE_NAME",
    "SCHEMA_VERSION",
    "AuditError",
    "BackgroundWriter",
    "JsonObject",
    "KeyValueStore",
    "MemoryStore",
    "PermissionDecision",
    "SessionGone",
    "SessionPage",
    "SessionRecord",
    "SessionStore",
    "SqliteStore",
    "StoreError",
    "StoreSchemaError",
    "StoreUnavailable",
    "StoreVersionError",
    "StoredSession",
    "default_state_dir",
    "open_store",
]

log = logging.getLogger("acp_progress.store")

DAY = 86_400.0


def default_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/acp-progress``, else ``~/.local/state/acp-progress``."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_STATE_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "state"
    return base / "acp-progress"


def open_store(
    directory: Path | None,
    *,
    enabled: bool = True,
    retention_days: float = 30.0,
    url: str | None = None,
) -> SessionStore:
    """The store to use: PostgreSQL at ``url`` when one is given (``ACP_PROGRESS_DATABASE_URL``,
    ``[store] url``), else SQLite in ``directory`` (default :func:`default_state_dir`), or memory
    when ``enabled`` is False or the SQLite database cannot be opened (one error line says why).
    In that last case the memory store refuses to audit, so every allowed tool call is refused with
    the reason on its card (the audit fails closed); ``enabled=False`` is the user's own choice.

    A PostgreSQL database that cannot be used raises :class:`StoreError` (naming host and port,
    never the password) instead of falling back: the processes sharing it would silently split
    into one that remembers and one that does not.

    Sessions not updated for ``retention_days`` are removed on open (0 keeps everything).
    """
    if not enabled:
        return MemoryStore()
    store: SessionStore
    if url:
        from acp_adapter.store.postgres import PostgresStore

        store = PostgresStore(url)
        _prune(store, retention_days)
        return store
    where = directory if directory is not None else default_state_dir()
    try:
        store = SqliteStore(where)
    except StoreVersionError as exc:
        log.error("%s; sessions are kept in memory only, and no allowed tool call runs", exc)
        return MemoryStore(unusable=str(exc))
    except (OSError, StoreError, Exception) as exc:  # unwritable directory, a disk error …
        log.error(
            "cannot use the session store in %s (%s); sessions are kept in memory only, and no "
            "allowed tool call runs (its audit could not be written)",
            where,
            exc,
        )
        return MemoryStore(unusable=str(exc))
    _prune(store, retention_days)
    return store


def _prune(store: SessionStore, retention_days: float) -> None:
    if retention_days > 0:
        try:
            removed = store.prune(time.time() - retention_days * DAY)
        except Exception as exc:
            log.warning("could not remove sessions older than %g days: %s", retention_days, exc)
        else:
            if removed:
                log.info("removed %d sessions older than %g days", removed, retention_days)
