"""Named locks shared by every process on every machine: PostgreSQL advisory locks.

Used where two processes must not do the same thing at once: one AG-UI run per thread across
replicas, one polling bridge per bot (the others stand by). Why advisory locks and not a row with
an expiry: PostgreSQL releases a session-level advisory lock itself when the connection that holds
it ends — a replica killed with ``kill -9`` loses its locks as soon as the server notices its
socket closed (at once on the same host; within the TCP keepalive below across a network) —
so no lease to tune, no clock to trust, and nothing to clean up.

All locks of a process live on one dedicated connection (not the store's pool: a pooled
connection handed back would keep its locks, and a lock must end exactly when its holder does).
When that connection breaks (the database restarted), every lock it held is gone:
:meth:`AdvisoryLocks.alive` says so, the holders log it, and the next call reconnects.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from typing import Any

from acp_adapter.store.base import StoreUnavailable
from acp_adapter.store.postgres_url import DatabaseUrl

log = logging.getLogger("acp_progress.store.locks")

#: TCP keepalive of the lock connection (seconds idle, between probes, probes): a holder whose
#: machine vanished (no FIN, no RST) loses its locks within about 5 + 2 * 3 = 11 s
KEEPALIVE: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
}


def lock_key(name: str) -> int:
    """A lock's name as PostgreSQL's signed 64-bit advisory-lock key (stable across versions)."""
    digest = hashlib.blake2b(f"acp-progress:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class AdvisoryLocks:
    """Session-level advisory locks on one connection of their own; thread-safe, blocking (call
    from a worker thread on an event loop)."""

    def __init__(self, url: str | DatabaseUrl, *, connect_timeout: float = 5.0) -> None:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - the postgres extra is missing
            from acp_adapter.store.postgres_database import driver_missing

            raise driver_missing() from exc
        self._psycopg = psycopg
        self.url = url if isinstance(url, DatabaseUrl) else DatabaseUrl.parse(url)
        self._connect_timeout = max(1, int(connect_timeout))
        self._mutex = threading.Lock()
        self._conn: Any = None
        #: names held now, with how many times each was taken (a lost connection empties it)
        self.held: dict[str, int] = {}
        #: how many times the connection holding the locks was lost (each time, all were)
        self.losses = 0

    def _connection(self) -> Any:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        if self._conn is not None:
            self._lost("its connection closed")
        try:
            self._conn = self._psycopg.connect(
                self.url.raw,
                autocommit=True,
                connect_timeout=self._connect_timeout,
                application_name="acp-progress-locks",
                **KEEPALIVE,
            )
        except self._psycopg.Error as exc:
            self._conn = None
            raise StoreUnavailable(
                f"cannot reach the session database at {self.url.where()} for its locks "
                f"({self.url.clean(' '.join(str(exc).split()))})"
            ) from None
        return self._conn

    def _lost(self, why: str) -> None:
        if self.held:
            log.error(
                "the database connection holding %d lock(s) was lost (%s): PostgreSQL released them",
                len(self.held),
                why,
            )
        self.held.clear()
        self.losses += 1
        if self._conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection: nothing to do
                self._conn.close()
        self._conn = None

    def _query(self, sql: str, key: int) -> Any:
        conn = self._connection()
        try:
            return conn.execute(sql, (key,)).fetchone()[0]
        except self._psycopg.Error as exc:
            self._lost(self.url.clean(" ".join(str(exc).split())))
            raise StoreUnavailable(
                f"the session database at {self.url.where()} did not answer a lock request"
            ) from None

    def try_lock(self, name: str) -> bool:
        """Take ``name`` if nobody holds it; never waits. Re-entrant within this process (each
        take needs its :meth:`unlock`)."""
        with self._mutex:
            got = bool(self._query("SELECT pg_try_advisory_lock(%s)", lock_key(name)))
            if got:
                self.held[name] = self.held.get(name, 0) + 1
            return got

    def unlock(self, name: str) -> None:
        """Let go of ``name`` (a lock lost with its connection is already free)."""
        with self._mutex:
            if name not in self.held:
                return
            try:
                self._query("SELECT pg_advisory_unlock(%s)", lock_key(name))
            except StoreUnavailable:
                return
            # PostgreSQL counts the takes of one session: so does this
            if self.held.get(name, 0) <= 1:
                self.held.pop(name, None)
            else:
                self.held[name] -= 1

    def alive(self) -> bool:
        """Whether the connection (and so every lock it holds) is still there; a False means
        the locks were lost (they are forgotten here too)."""
        with self._mutex:
            if self._conn is None:
                return not self.held
            try:
                self._conn.execute("SELECT 1")
            except self._psycopg.Error as exc:
                self._lost(self.url.clean(" ".join(str(exc).split())))
                return False
            return True

    def close(self) -> None:
        """Close the connection: PostgreSQL releases every lock it held."""
        with self._mutex:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
            self._conn = None
            self.held.clear()
