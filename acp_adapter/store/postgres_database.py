"""The PostgreSQL session database, connected: a pool of connections to the one database every
acp-progress process on every machine shares, and the calls and transactions the store's parts
run on it.

Why each choice:

* **A connection pool (psycopg_pool), each connection checked when it is handed out** — after
  the server restarts, a dead connection is replaced instead of failing the next write.
* **Writes stay off the hot path** — callers on an event loop still go through
  :class:`~acp_adapter.store.writer.BackgroundWriter`; :meth:`PostgresDatabase.batch` runs its
  closures in one transaction on one pooled connection (one round trip per statement, one commit
  per batch).
* **A database that goes away is waited for, not given up on** — a statement that fails because
  the connection broke (the server restarted, a failover) raises :class:`StoreUnavailable`; a
  single call retries for :attr:`PostgresDatabase.retry_for` seconds, saying so in the log, and
  the background writer keeps its batch and retries it whole until the database is back (a rolled
  back transaction is replayed exactly). Other errors are not retried.
* **An unreachable database fails at start** — migrating on a connection of its own, it names
  host and port (:class:`StoreUnreachable`) instead of leaving a pool to retry in the background.
* **The password is never shown** — every error message passes :meth:`DatabaseUrl.clean`; the
  URL is only ever printed as :meth:`DatabaseUrl.shown`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from acp_adapter.store.base import StoreError, StoreUnavailable
from acp_adapter.store.postgres_schema import SCHEMA, check_schema, migrate
from acp_adapter.store.postgres_url import DatabaseUrl

log = logging.getLogger("acp_progress.store")

T = TypeVar("T")

#: seconds a connection attempt may take (an unreachable host fails within it)
CONNECT_TIMEOUT_S = 5
#: seconds one call (a read, a write outside the writer) retries a database that went away
RETRY_FOR_S = 15.0
#: connections per process (the writer, readers, the audit)
POOL_MAX = 8
#: how long a writer batch waits for a pooled connection before it counts the database as away
#: (then the writer keeps the batch and retries it, saying so: :mod:`acp_adapter.store.writer`)
BATCH_CONNECTION_WAIT_S = 1.0
#: the shortest wait for a pooled connection (a call whose retry window is over still gets one try)
MIN_CONNECTION_WAIT_S = 0.2


class StoreUnreachable(StoreUnavailable):
    """The database cannot be reached at start (the message names host and port, never the password)."""


def driver_missing() -> StoreError:
    return StoreError(
        "the PostgreSQL store needs psycopg: pip install 'acp-progress[postgres]' "
        "(or unset ACP_PROGRESS_DATABASE_URL / [store] url to use the SQLite file)"
    )


class PostgresDatabase:
    """The shared database: migrated and checked on a first connection of its own, then used
    through a pool, with a broken connection retried and every error message password-free."""

    mark = "%s"
    prefix = f"{SCHEMA}."

    def __init__(
        self,
        url: str | DatabaseUrl,
        *,
        retry_for: float = RETRY_FOR_S,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        pool_max: int = POOL_MAX,
    ) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool, PoolTimeout
        except ImportError as exc:
            raise driver_missing() from exc
        self._psycopg = psycopg
        self._pool_timeout = PoolTimeout
        self.url = url if isinstance(url, DatabaseUrl) else DatabaseUrl.parse(url)
        self.retry_for = retry_for
        self._connect_kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(1, int(connect_timeout)),
            "application_name": "acp-progress",
        }
        self._local = threading.local()
        pool_log = logging.getLogger("psycopg.pool")
        if pool_log.level == logging.NOTSET:
            # its reconnect attempts are multi-line and repeat every second of an outage; this
            # store says once that the database is away and once that it is back
            pool_log.setLevel(logging.ERROR)
        with self._first_connection() as conn:
            migrate(conn, self.url.where())
            check_schema(conn, self.url.where())
        self._pool = ConnectionPool(
            self.url.raw,
            kwargs=self._connect_kwargs,
            min_size=1,
            max_size=pool_max,
            open=False,
            check=ConnectionPool.check_connection,
            timeout=max(1.0, connect_timeout),
            name="acp-progress-store",
        )
        self._pool.open(wait=False)

    @contextlib.contextmanager
    def _first_connection(self) -> Iterator[Any]:
        """A connection of its own for migrating: an unreachable database fails here, at start,
        with host and port named (:class:`StoreUnreachable`)."""
        try:
            conn = self._psycopg.connect(self.url.raw, **self._connect_kwargs)
        except self._psycopg.Error as exc:
            raise StoreUnreachable(
                f"cannot reach the session database at {self.url.where()} "
                f"({self.url.clean(_first_line(exc))})"
            ) from None
        try:
            yield conn
        except self._psycopg.Error as exc:
            raise StoreError(
                f"the session database at {self.url.where()} could not be prepared: "
                f"{self.url.clean(_first_line(exc))}"
            ) from None
        finally:
            conn.close()

    def is_transient(self, exc: BaseException) -> bool:
        """The connection broke or could not be made (the server restarted, a failover …)."""
        return isinstance(
            exc,
            StoreUnavailable
            | self._psycopg.OperationalError
            | self._psycopg.InterfaceError
            | self._pool_timeout,
        )

    def _unavailable(self, exc: BaseException) -> StoreUnavailable:
        return StoreUnavailable(
            f"the session database at {self.url.where()} is unavailable ({self.url.clean(_first_line(exc))})"
        )

    def _failed(self, exc: BaseException) -> StoreError:
        return StoreError(f"the session database at {self.url.where()}: {self.url.clean(_first_line(exc))}")

    @property
    def in_batch(self) -> bool:
        """True in the thread that runs a :meth:`batch` (its writes join the batch's transaction)."""
        return getattr(self._local, "conn", None) is not None

    def run(self, op: Callable[[Any], T], *, retry_for: float | None = None, what: str = "a call") -> T:
        """``op(connection)`` on a pooled connection (inside :meth:`batch`: on the batch's, with no
        retry — the writer retries the batch whole). A broken connection is retried for
        ``retry_for`` seconds (default :attr:`retry_for`), said once in the log."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            try:
                return op(conn)
            except Exception as exc:
                raise (self._unavailable(exc) if self.is_transient(exc) else self._failed(exc)) from None
        window = self.retry_for if retry_for is None else retry_for
        deadline = time.monotonic() + window
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            try:
                wait = max(MIN_CONNECTION_WAIT_S, min(remaining, CONNECT_TIMEOUT_S))
                with self._pool.connection(timeout=wait) as conn:
                    result = op(conn)
            except Exception as exc:
                if not self.is_transient(exc):
                    raise self._failed(exc) from None
                attempt += 1
                if time.monotonic() >= deadline:
                    raise self._unavailable(exc) from None
                if attempt == 1:
                    log.warning(
                        "the session database at %s is unavailable (%s); retrying %s for up to %g s",
                        self.url.where(),
                        self.url.clean(_first_line(exc)),
                        what,
                        window,
                    )
                time.sleep(min(0.1 * 2**attempt, 1.0, max(0.0, deadline - time.monotonic())))
                continue
            if attempt:
                log.warning(
                    "the session database at %s is back: %s went through after %d retries",
                    self.url.where(),
                    what,
                    attempt,
                )
            return result

    def write(self, op: Callable[[Any], T], what: str = "a call") -> T:
        """:meth:`run` (a statement commits on its own; ``op`` opens a transaction for several)."""
        return self.run(op, what=what)

    def read(self, sql: str, args: Sequence[Any] = (), what: str = "a call") -> list[Any]:
        rows: list[Any] = self.run(lambda db: db.execute(sql, args).fetchall(), what=what)
        return rows

    @contextlib.contextmanager
    def batch(
        self, *, connection_wait: float = BATCH_CONNECTION_WAIT_S, lock_timeout_ms: int | None = None
    ) -> Iterator[None]:
        """Run the writes made inside it as one transaction on one connection (inside a batch
        already, they join it). ``lock_timeout_ms`` bounds, for this transaction, the wait for a
        row another process holds (housekeeping that may as well be skipped)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            if lock_timeout_ms is not None:
                self.run(lambda db: db.execute(f"SET LOCAL lock_timeout = '{lock_timeout_ms}ms'"))
            yield
            return
        try:
            with self._pool.connection(timeout=connection_wait) as conn, conn.transaction():
                if lock_timeout_ms is not None:
                    conn.execute(f"SET LOCAL lock_timeout = '{lock_timeout_ms}ms'")
                self._local.conn = conn
                try:
                    yield
                finally:
                    self._local.conn = None
        except StoreError:
            raise
        except Exception as exc:
            if self.is_transient(exc):
                raise self._unavailable(exc) from None
            if isinstance(exc, self._psycopg.Error):
                raise self._failed(exc) from None
            raise

    def ping(self, timeout: float = 2.0) -> bool:
        """Whether the database answers now (``/health``)."""
        try:
            with self._pool.connection(timeout=timeout) as conn:
                conn.execute("SELECT 1")
        except Exception:
            return False
        return True

    def describe(self) -> str:
        """Where sessions go, as a person may read it (the password hidden)."""
        return f"PostgreSQL {self.url.shown()}"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._pool.close(timeout=2.0)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.splitlines()[:1]) if text else type(exc).__name__
