"""The front-end state table both database stores keep (a chat's session id, an update offset, a
thread's session, the recorder's open-turn markers), and what a store's parts need of its database.

Why a module of its own: the ``kv`` table is the same in SQLite and PostgreSQL — the same columns,
the same statements but for the parameter mark and the schema prefix — so one class keeps it for
both, over :class:`SqlDatabase`, the little each database connection offers its parts. The
sessions and the audit are not shared this way: how SQLite and PostgreSQL lock a session, size an
event and make an audit row durable differ (:mod:`~acp_adapter.store.sqlite_tables`,
:mod:`~acp_adapter.store.postgres_tables`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from acp_adapter.store.base import dumps, scrub

T = TypeVar("T")


class SqlDatabase(Protocol):
    """An open SQL database as a store's parts use it."""

    #: the dialect's parameter mark (``?`` for SQLite, ``%s`` for psycopg)
    mark: str
    #: what goes before a table's name (``""``, or the schema and a dot)
    prefix: str

    def write(self, op: Callable[[Any], T], what: str) -> T:
        """``op(connection)`` where a write belongs (inside a writer batch: in its transaction);
        ``what`` names it in a log line or an error."""
        ...

    def read(self, sql: str, args: Sequence[Any], what: str) -> list[Any]:
        """The rows of one query (inside a writer batch: seeing its writes)."""
        ...


class KeyValueTable:
    """Front-end state in the ``kv`` table: JSON values by namespace and key, each scrubbed by the
    canonical redactor on its way in."""

    def __init__(self, db: SqlDatabase) -> None:
        self._db = db
        self._table = f"{db.prefix}kv"

    def put(self, namespace: str, key: str, value: Any) -> None:
        body = dumps(scrub(value))
        m = self._db.mark
        sql = (
            f"INSERT INTO {self._table} (namespace, key, value, updated_at) VALUES ({m}, {m}, {m}, {m}) "
            "ON CONFLICT (namespace, key) DO UPDATE SET "
            "value = excluded.value, updated_at = excluded.updated_at"
        )
        args = (namespace, key, body, time.time())
        self._db.write(lambda conn: conn.execute(sql, args), what="saving front-end state")

    def get(self, namespace: str, key: str) -> Any | None:
        m = self._db.mark
        rows = self._db.read(
            f"SELECT value FROM {self._table} WHERE namespace = {m} AND key = {m}",
            (namespace, key),
            what="reading front-end state",
        )
        return json.loads(rows[0][0]) if rows else None

    def items(self, namespace: str) -> list[tuple[str, Any]]:
        rows = self._db.read(
            f"SELECT key, value FROM {self._table} WHERE namespace = {self._db.mark} ORDER BY key",
            (namespace,),
            what="reading front-end state",
        )
        return [(key, json.loads(value)) for key, value in rows]

    def remove(self, namespace: str, key: str) -> None:
        m = self._db.mark
        sql = f"DELETE FROM {self._table} WHERE namespace = {m} AND key = {m}"
        self._db.write(lambda conn: conn.execute(sql, (namespace, key)), what="removing front-end state")
