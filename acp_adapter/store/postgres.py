"""The PostgreSQL session store: one database that every acp-progress process on every machine
shares (several AG-UI replicas behind a load balancer, a bridge and its standby, editors' agents).

Why each choice:

* **The same interface and the same redaction as SQLite** — every caller (the recorder, the
  durable outbox, the bridge's update offset, the audit, the AG-UI thread map) works unchanged;
  every string passes :func:`~acp_adapter.store.base.scrub` on its way in.
* **A store made of parts, as the SQLite one** — the connection (pool, retries, transactions),
  the conversations, the permission audit and the front-end state are four jobs;
  :class:`PostgresStore` holds one of each and answers the
  :class:`~acp_adapter.store.base.SessionStore` interface with them:

  * :class:`~acp_adapter.store.postgres_database.PostgresDatabase` — reaching, migrating, pooling
    and retrying the server, its transactions;
  * :class:`~acp_adapter.store.postgres_tables.PostgresSessions` — sessions, events, model history;
  * :class:`~acp_adapter.store.postgres_tables.PostgresAudit` — the permission audit, which fails
    closed within a bounded wait;
  * :class:`~acp_adapter.store.kv_table.KeyValueTable` — front-end state, the same for SQLite.

* **Pruning is housekeeping** — old sessions and audit entries as old go in one transaction that
  waits at most :data:`PRUNE_LOCK_MS` for a row another process holds and is not retried (the next
  start prunes).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from acp_adapter.store.base import (
    JsonObject,
    PermissionDecision,
    SessionPage,
    SessionRecord,
    StoredSession,
)
from acp_adapter.store.kv_table import KeyValueTable
from acp_adapter.store.postgres_database import (
    BATCH_CONNECTION_WAIT_S,
    CONNECT_TIMEOUT_S,
    MIN_CONNECTION_WAIT_S,
    POOL_MAX,
    RETRY_FOR_S,
    PostgresDatabase,
)
from acp_adapter.store.postgres_tables import AUDIT_WAIT_S, PostgresAudit, PostgresSessions
from acp_adapter.store.postgres_url import DatabaseUrl

#: the longest start-up pruning waits for a row lock (it is housekeeping; the next start prunes)
PRUNE_LOCK_MS = 200


class PostgresStore:
    """Sessions, permission audit and front-end state in PostgreSQL (schema ``acp_progress``)."""

    def __init__(
        self,
        url: str | DatabaseUrl,
        *,
        retry_for: float = RETRY_FOR_S,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        pool_max: int = POOL_MAX,
        audit_wait: float = AUDIT_WAIT_S,
        batch_wait: float = BATCH_CONNECTION_WAIT_S,
    ) -> None:
        #: how long a writer batch waits for a pooled connection before the database counts as
        #: away (the writer then keeps the batch and retries it, saying so)
        self.batch_wait = batch_wait
        self.database = PostgresDatabase(
            url, retry_for=retry_for, connect_timeout=connect_timeout, pool_max=pool_max
        )
        self.sessions = PostgresSessions(self.database)
        self.audit = PostgresAudit(self.database, audit_wait)
        self.state = KeyValueTable(self.database)

    def batch(self) -> contextlib.AbstractContextManager[None]:
        """Run the writes made inside it as one transaction on one connection."""
        return self.database.batch(connection_wait=self.batch_wait)

    def ping(self, timeout: float = 2.0) -> bool:
        """Whether the database answers now (``/health``)."""
        return self.database.ping(timeout)

    # ------------------------------------------------------------------ sessions

    def upsert_session(self, record: SessionRecord) -> None:
        self.sessions.upsert(record)

    def append_events(self, session_id: str, events: Sequence[JsonObject], updated_at: float) -> None:
        self.sessions.append_events(session_id, events, updated_at)

    def trim_events(self, session_id: str, max_bytes: int, note: JsonObject) -> tuple[int, int]:
        return self.sessions.trim_events(session_id, max_bytes, note)

    def replace_history(self, session_id: str, history: Sequence[JsonObject]) -> None:
        self.sessions.replace_history(session_id, history)

    def load(self, session_id: str) -> StoredSession | None:
        return self.sessions.load(session_id)

    def fork(self, source_id: str, new_id: str, cwd: str, now: float) -> StoredSession | None:
        return self.sessions.fork(source_id, new_id, cwd, now)

    def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> SessionPage:
        return self.sessions.page(cwd, cursor, limit)

    def delete(self, session_id: str) -> bool:
        return self.sessions.delete(session_id)

    def prune(self, older_than: float) -> int:
        """Remove sessions last used before ``older_than`` (and audit entries as old); waits at
        most :data:`PRUNE_LOCK_MS` for a row another process holds (housekeeping)."""
        with self.database.batch(connection_wait=MIN_CONNECTION_WAIT_S, lock_timeout_ms=PRUNE_LOCK_MS):
            self.audit.prune(older_than)
            return self.sessions.prune(older_than)

    # ------------------------------------------------------------------ permission audit

    def record_permission(self, decision: PermissionDecision) -> None:
        """Write one audit row durably, or raise :class:`~acp_adapter.store.base.AuditError`
        (:meth:`PostgresAudit.record <acp_adapter.store.postgres_tables.PostgresAudit.record>`)."""
        self.audit.record(decision)

    def permission_audit(self, limit: int = 100) -> list[PermissionDecision]:
        return self.audit.recent(limit)

    # ------------------------------------------------------------------ front-end state

    def put(self, namespace: str, key: str, value: Any) -> None:
        self.state.put(namespace, key, value)

    def get(self, namespace: str, key: str) -> Any | None:
        return self.state.get(namespace, key)

    def items(self, namespace: str) -> list[tuple[str, Any]]:
        return self.state.items(namespace)

    def remove(self, namespace: str, key: str) -> None:
        self.state.remove(namespace, key)

    def close(self) -> None:
        self.database.close()
